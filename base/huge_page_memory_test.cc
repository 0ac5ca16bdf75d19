#include "base/huge_page_memory.h"

#include <cstdint>
#include <cstring>
#include <utility>

#include "gtest/gtest.h"

namespace petrel {
namespace {

TEST(HugePageMemoryTest, SmallBlockIsZeroedAndWritable) {
  absl::StatusOr<HugePageMemory> m = HugePageMemory::Map(1000, false);
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_NE(m->data(), nullptr);
  EXPECT_EQ(m->size(), 1000u);
  const char* p = static_cast<const char*>(m->data());
  for (size_t i = 0; i < m->size(); ++i) ASSERT_EQ(p[i], 0);
  std::memset(m->data(), 7, m->size());  // writable end to end
}

TEST(HugePageMemoryTest, AdvisedBlockIsAlignedToAHugePage) {
  const size_t bytes = HugePageMemory::kHugePageBytes + 1;
  absl::StatusOr<HugePageMemory> m = HugePageMemory::Map(bytes, true);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->size(), bytes);
  EXPECT_EQ(
      reinterpret_cast<uintptr_t>(m->data()) % HugePageMemory::kHugePageBytes,
      0u);
  static_cast<char*>(m->data())[bytes - 1] = 1;
}

TEST(HugePageMemoryTest, TooLargeIsResourceExhausted) {
  absl::StatusOr<HugePageMemory> m = HugePageMemory::Map(size_t{1} << 62, true);
  EXPECT_EQ(m.status().code(), absl::StatusCode::kResourceExhausted);
}

TEST(HugePageMemoryTest, MovesOwnership) {
  absl::StatusOr<HugePageMemory> m =
      HugePageMemory::Map(HugePageMemory::kHugePageBytes, true);
  ASSERT_TRUE(m.ok()) << m.status();
  HugePageMemory a = *std::move(m);
  void* p = a.data();
  HugePageMemory b(std::move(a));
  EXPECT_EQ(b.data(), p);
  EXPECT_EQ(a.data(), nullptr);  // NOLINT(bugprone-use-after-move): specified
  EXPECT_EQ(a.size(), 0u);
  a = std::move(b);
  EXPECT_EQ(a.data(), p);
  HugePageMemory empty;
  EXPECT_EQ(empty.data(), nullptr);
  EXPECT_EQ(empty.size(), 0u);
}

}  // namespace
}  // namespace petrel
