#include "ps/sarray.h"

#include <vector>

#include "gtest/gtest.h"

namespace ps {
namespace {

TEST(SArrayTest, CopiesShareStorageAndResizeKeepsTheElements) {
  SArray<float> a(3, 1.5f);
  SArray<float> b = a;
  b[1] = 7;
  EXPECT_EQ(a[1], 7);  // shared, as PS-Lite's
  a.resize(5, 2);
  EXPECT_EQ(a.size(), 5u);
  EXPECT_EQ(a[0], 1.5f);
  EXPECT_EQ(a[1], 7);
  EXPECT_EQ(a[4], 2);
  EXPECT_EQ(b.size(), 3u);
  a.resize(2);
  EXPECT_EQ(a.size(), 2u);
  EXPECT_EQ(a.back(), 7);
}

TEST(SArrayTest, PushBackAppendAndSegment) {
  SArray<int> a;
  for (int i = 0; i < 100; ++i) a.push_back(i);
  ASSERT_EQ(a.size(), 100u);
  EXPECT_EQ(a.front(), 0);
  EXPECT_EQ(a.back(), 99);
  SArray<int> tail = a.segment(90, 100);
  EXPECT_EQ(tail.size(), 10u);
  EXPECT_EQ(tail[0], 90);
  a.append(tail);
  EXPECT_EQ(a.size(), 110u);
  EXPECT_EQ(a[100], 90);
  a.pop_back();
  EXPECT_EQ(a.back(), 98);
  a.clear();
  EXPECT_TRUE(a.empty());
}

TEST(SArrayTest, CopyFromOwnsACopy) {
  std::vector<double> v = {1, 2, 3};
  SArray<double> a(v);
  v[0] = 9;
  EXPECT_EQ(a[0], 1);
  SArray<double> b;
  b.CopyFrom(a);
  b[1] = 5;
  EXPECT_EQ(a[1], 2);
  SArray<double> c;
  c.CopyFrom(v.begin(), v.end());
  EXPECT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0], 9);
}

TEST(SArrayTest, WrapsCallerMemoryAndFreesItOnlyWhenAsked) {
  float outside[4] = {1, 2, 3, 4};
  SArray<float> wrapped(outside, 4);
  wrapped[0] = 10;
  EXPECT_EQ(outside[0], 10);
  bool freed = false;
  {
    SArray<int> owned;
    owned.reset(new int[3]{1, 2, 3}, 3, [&freed](int* p) {
      delete[] p;
      freed = true;
    });
    SArray<int> copy = owned;
    owned.clear();
    EXPECT_FALSE(freed);  // the copy keeps it
    EXPECT_EQ(copy[2], 3);
  }
  EXPECT_TRUE(freed);
}

TEST(SArrayTest, ReinterpretsAndConvertsToPetrelWithoutCopying) {
  SArray<float> f(4, 0);
  SArray<char> bytes(f);
  EXPECT_EQ(bytes.size(), 16u);
  EXPECT_EQ(bytes.data(), reinterpret_cast<char*>(f.data()));
  f.reserve(100);  // capacity beyond size: not sent
  petrel::SArray<float> p = f;
  EXPECT_EQ(p.size(), 4u);
  EXPECT_EQ(p.data(), f.data());
  SArray<float> back = p;
  EXPECT_EQ(back.data(), f.data());
  EXPECT_EQ(petrel::SArray<float>(SArray<float>()).size(), 0u);
}

}  // namespace
}  // namespace ps
