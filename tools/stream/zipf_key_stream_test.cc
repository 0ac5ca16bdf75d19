#include "tools/stream/zipf_key_stream.h"

#include <set>

#include "gtest/gtest.h"

namespace petrel {
namespace {

TEST(ZipfKeyStreamTest, BatchesAreSortedDistinctAndCounted) {
  ZipfKeyStreamOptions o;
  o.key_space = 1000;
  o.exponent = 1.1;
  o.draws_per_batch = 500;
  auto stream = ZipfKeyStream::Create(o);
  ASSERT_TRUE(stream.ok()) << stream.status();
  std::set<uint64_t> all;
  for (int b = 0; b < 20; ++b) {
    std::vector<uint64_t> keys = (*stream)->Next();
    ASSERT_FALSE(keys.empty());
    EXPECT_LT(keys.size(), 500u);  // Zipf repeats its top ranks
    for (size_t i = 1; i < keys.size(); ++i) EXPECT_LT(keys[i - 1], keys[i]);
    all.insert(keys.begin(), keys.end());
  }
  EXPECT_EQ((*stream)->draws(), 10000u);
  // The bitmap counts exactly the distinct keys sent.
  EXPECT_EQ((*stream)->distinct(), all.size());
  EXPECT_LE(all.size(), 1000u);
  // Every key is the key of a rank in 1..key_space.
  std::set<uint64_t> possible;
  for (uint64_t r = 1; r <= 1000; ++r) possible.insert(ZipfKeyStream::KeyOf(r));
  for (uint64_t k : all) EXPECT_EQ(possible.count(k), 1u) << k;
}

TEST(ZipfKeyStreamTest, SameSeedSameStream) {
  ZipfKeyStreamOptions o;
  o.key_space = 1 << 20;
  o.draws_per_batch = 100;
  auto a = ZipfKeyStream::Create(o);
  auto b = ZipfKeyStream::Create(o);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ((*a)->Next(), (*b)->Next());
}

TEST(ZipfKeyStreamTest, RefusesBadOptions) {
  ZipfKeyStreamOptions o;
  o.key_space = 0;
  EXPECT_EQ(ZipfKeyStream::Create(o).status().message(),
            "key_space = 0 is not in 1..2^36");
  o.key_space = 10;
  o.exponent = 0;
  EXPECT_EQ(ZipfKeyStream::Create(o).status().message(),
            "zipf_exponent = 0 is not in (0, 10]");
  o.exponent = 1;
  o.draws_per_batch = 0;
  EXPECT_EQ(ZipfKeyStream::Create(o).status().message(),
            "draws_per_batch = 0 is not in 1..2^24");
}

}  // namespace
}  // namespace petrel
