#include "server/page_buffer.h"

#include <cstdint>
#include <cstring>
#include <utility>

#include "gtest/gtest.h"

namespace petrel {
namespace {

TEST(PageBufferTest, SmallBlockHoldsWhatWasAsked) {
  PageBuffer b(1000);
  ASSERT_NE(b.data(), nullptr);
  EXPECT_EQ(b.size(), 1000u);
  std::memset(b.data(), 7, b.size());  // writable end to end
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % alignof(double), 0u);
}

TEST(PageBufferTest, LargeBlockIsWholeHugePages) {
  const size_t bytes = PageBuffer::kHugePageBytes + 1;
  PageBuffer b(bytes);
  ASSERT_NE(b.data(), nullptr);
  EXPECT_EQ(b.size(), 2 * PageBuffer::kHugePageBytes);
  static_cast<char*>(b.data())[b.size() - 1] = 1;
}

TEST(PageBufferTest, MovesOwnership) {
  PageBuffer a(PageBuffer::kHugePageBytes);
  void* p = a.data();
  PageBuffer b(std::move(a));
  EXPECT_EQ(b.data(), p);
  EXPECT_EQ(a.data(), nullptr);  // NOLINT(bugprone-use-after-move): specified
  EXPECT_EQ(a.size(), 0u);
  a = std::move(b);
  EXPECT_EQ(a.data(), p);
  PageBuffer empty;
  EXPECT_EQ(empty.data(), nullptr);
  EXPECT_EQ(empty.size(), 0u);
}

}  // namespace
}  // namespace petrel
