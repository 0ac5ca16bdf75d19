#include "server/row_index.h"

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "gtest/gtest.h"

namespace petrel {
namespace {

TEST(RowIndexTest, EmptyFindsNothing) {
  RowIndex index;
  EXPECT_EQ(index.Find(0), RowIndex::kNoRow);
  EXPECT_EQ(index.size(), 0u);
  EXPECT_EQ(index.MemoryBytes(), 0u);
  index.Prefetch(5);  // harmless on an empty index
}

TEST(RowIndexTest, InsertsOnceAndNumbersRowsInOrder) {
  RowIndex index;
  bool inserted = false;
  // 0 and ~0 are ordinary keys (the bias key is ~0).
  EXPECT_EQ(index.FindOrInsert(~uint64_t{0}, &inserted), 0u);
  EXPECT_TRUE(inserted);
  EXPECT_EQ(index.FindOrInsert(0, &inserted), 1u);
  EXPECT_TRUE(inserted);
  EXPECT_EQ(index.FindOrInsert(~uint64_t{0}, &inserted), 0u);
  EXPECT_FALSE(inserted);
  EXPECT_EQ(index.Find(0), 1u);
  EXPECT_EQ(index.Find(~uint64_t{0}), 0u);
  EXPECT_EQ(index.Find(42), RowIndex::kNoRow);
  EXPECT_EQ(index.size(), 2u);
}

// 300,000 keys: consecutive ones (libsvm indices) and random ones, through
// many doublings, past the size where the slots come from huge pages; every
// key keeps its row and ForEach visits each once.
TEST(RowIndexTest, GrowsAndKeepsEveryRow) {
  RowIndex index;
  std::mt19937_64 rng(1);
  absl::flat_hash_map<uint64_t, uint32_t> want;
  for (uint64_t i = 0; i < 300000; ++i) {
    const uint64_t key = i % 2 == 0 ? i : rng();
    bool inserted = false;
    const uint32_t row = index.FindOrInsert(key, &inserted);
    auto [it, fresh] = want.try_emplace(key, row);
    ASSERT_EQ(inserted, fresh);
    ASSERT_EQ(row, it->second);
  }
  EXPECT_EQ(index.size(), want.size());
  // Half load at most: 16-byte slots, at least two per key.
  EXPECT_GE(index.MemoryBytes(), 32 * want.size());
  for (const auto& [key, row] : want) ASSERT_EQ(index.Find(key), row);
  size_t visited = 0;
  index.ForEach([&](uint64_t key, uint32_t row) {
    ++visited;
    EXPECT_EQ(want.at(key), row);
  });
  EXPECT_EQ(visited, want.size());
}

TEST(RowIndexTest, MovesItsSlots) {
  RowIndex a;
  bool inserted = false;
  a.FindOrInsert(7, &inserted);
  RowIndex b(std::move(a));
  EXPECT_EQ(b.Find(7), 0u);
  EXPECT_EQ(a.size(), 0u);  // NOLINT(bugprone-use-after-move): specified
  EXPECT_EQ(a.Find(7), RowIndex::kNoRow);
  a = std::move(b);
  EXPECT_EQ(a.Find(7), 0u);
}

}  // namespace
}  // namespace petrel
