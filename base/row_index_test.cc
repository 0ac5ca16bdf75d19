#include "base/row_index.h"

#include <cstdint>
#include <random>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "gtest/gtest.h"

namespace petrel {
namespace {

TEST(RowIndexTest, EmptyFindsNothing) {
  RowIndex index;
  EXPECT_EQ(index.Find(0), nullptr);
  EXPECT_EQ(index.size(), 0u);
  EXPECT_EQ(index.MemoryBytes(), 0u);
  index.Prefetch(index.Home(5));  // harmless on an empty index
  int visited = 0;
  index.ForEach([&](const RowIndex::Slot&) { ++visited; });
  EXPECT_EQ(visited, 0);
}

TEST(RowIndexTest, InsertsOnceWithWidthZero) {
  RowIndex index;
  ASSERT_TRUE(index.Reserve(2).ok());
  bool inserted = false;
  // 0 and ~0 are ordinary keys (the bias key is ~0).
  RowIndex::Slot* bias = index.FindOrInsert(~uint64_t{0}, &inserted);
  EXPECT_TRUE(inserted);
  EXPECT_EQ(bias->width, 0u);
  bias->width = 8;
  bias->row = 0;
  RowIndex::Slot* zero = index.FindOrInsert(0, &inserted);
  EXPECT_TRUE(inserted);
  zero->width = 8;
  zero->row = 1;
  EXPECT_EQ(index.FindOrInsert(~uint64_t{0}, &inserted)->row, 0u);
  EXPECT_FALSE(inserted);
  EXPECT_EQ(index.Find(0)->row, 1u);
  EXPECT_EQ(index.Find(~uint64_t{0})->width, 8u);
  EXPECT_EQ(index.Find(42), nullptr);
  EXPECT_EQ(index.size(), 2u);
}

// 300,000 keys, one Reserve before each insert (as a Table does):
// consecutive ones (libsvm indices) and random ones, through many
// doublings, past the size where the slots come from huge pages; every key
// keeps its row and ForEach visits each once.
TEST(RowIndexTest, GrowsAndKeepsEveryRow) {
  RowIndex index;
  std::mt19937_64 rng(1);
  absl::flat_hash_map<uint64_t, uint32_t> want;
  for (uint64_t i = 0; i < 300000; ++i) {
    const uint64_t key = i % 2 == 0 ? i : rng();
    ASSERT_TRUE(index.Reserve(index.size() + 1).ok());
    bool inserted = false;
    RowIndex::Slot* slot = index.FindOrInsert(key, &inserted);
    auto [it, fresh] =
        want.try_emplace(key, static_cast<uint32_t>(want.size()));
    ASSERT_EQ(inserted, fresh);
    if (inserted) {
      slot->width = 1;
      slot->row = it->second;
    }
    ASSERT_EQ(slot->row, it->second);
  }
  EXPECT_EQ(index.size(), want.size());
  // 3/4 load at most: 16-byte slots, at least 4/3 per key.
  EXPECT_GE(index.MemoryBytes() * 3, 16 * 4 * want.size());
  EXPECT_GE(index.capacity() * 3, 4 * want.size());
  for (const auto& [key, row] : want) {
    const size_t home = index.Home(key);
    index.Prefetch(home);
    ASSERT_EQ(index.Find(key, home)->row, row);
  }
  size_t visited = 0;
  index.ForEach([&](const RowIndex::Slot& s) {
    ++visited;
    EXPECT_EQ(want.at(s.key), s.row);
  });
  EXPECT_EQ(visited, want.size());
}

// A Reserve that makes room for many keys at once moves no slot while
// they go in.
TEST(RowIndexTest, ReserveKeepsSlotsInPlace) {
  RowIndex index;
  ASSERT_TRUE(index.Reserve(1000).ok());
  const size_t capacity = index.capacity();
  bool inserted = false;
  RowIndex::Slot* first = index.FindOrInsert(12345, &inserted);
  for (uint64_t key = 0; key < 999; ++key) index.FindOrInsert(key, &inserted);
  EXPECT_EQ(index.capacity(), capacity);
  EXPECT_EQ(index.Find(12345), first);
  ASSERT_TRUE(index.Reserve(1000).ok());  // room already: nothing moves
  EXPECT_EQ(index.Find(12345), first);
}

TEST(RowIndexTest, CompactDropsKeysOfWidthZeroInPlace) {
  RowIndex index;
  ASSERT_TRUE(index.Reserve(1000).ok());
  const size_t capacity = index.capacity();
  for (uint64_t k = 0; k < 1000; ++k) {
    bool inserted;
    RowIndex::Slot* s = index.FindOrInsert(k, &inserted);
    s->width = k % 3 == 0 ? 0 : 1;
    s->row = static_cast<uint32_t>(k);
  }
  ASSERT_TRUE(index.Compact().ok());
  EXPECT_EQ(index.capacity(), capacity);
  EXPECT_EQ(index.size(), 666u);
  for (uint64_t k = 0; k < 1000; ++k) {
    const RowIndex::Slot* s = index.Find(k);
    if (k % 3 == 0) {
      EXPECT_EQ(s, nullptr) << k;
    } else {
      ASSERT_NE(s, nullptr) << k;
      EXPECT_EQ(s->row, k);
    }
  }
  RowIndex empty;
  EXPECT_TRUE(empty.Compact().ok());
  EXPECT_EQ(empty.size(), 0u);
}

// A lookup one bucket at a time (as the stores' prefetching walks do)
// finds what Find finds: in the home bucket, or, after a full bucket,
// from NextBucket on; and inserts where FindOrInsert would.
TEST(RowIndexTest, BucketAtATimeAgreesWithFind) {
  RowIndex index;
  ASSERT_TRUE(index.Reserve(1500).ok());  // 2,048 slots, 73% full below
  std::mt19937_64 rng(3);
  std::vector<uint64_t> keys(1500);
  int past_home = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    keys[i] = rng();
    bool inserted;
    RowIndex::Slot* s =
        index.FindOrInsertInBucket(keys[i], index.Home(keys[i]), &inserted);
    if (s == nullptr) {  // the home bucket is full
      ++past_home;
      s = index.FindOrInsert(keys[i], index.NextBucket(index.Home(keys[i])),
                             &inserted);
    }
    ASSERT_TRUE(inserted);
    s->width = 1;
    s->row = static_cast<uint32_t>(i);
  }
  EXPECT_GT(past_home, 50);
  for (size_t i = 0; i < keys.size(); ++i) {
    const size_t home = index.Home(keys[i]);
    bool full;
    RowIndex::Slot* s = index.FindInBucket(keys[i], home, &full);
    if (s == nullptr) {
      ASSERT_TRUE(full) << "key " << i << " is past a bucket with room";
      s = index.Find(keys[i], index.NextBucket(home));
    }
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s, index.Find(keys[i]));
    EXPECT_EQ(s->row, i);
  }
  // A key never inserted: not found, from wherever its walk stops.
  bool full = true;
  const uint64_t missing = 12345;
  if (index.Find(missing) == nullptr) {
    size_t b = index.Home(missing);
    while (index.FindInBucket(missing, b, &full) == nullptr && full) {
      b = index.NextBucket(b);
    }
    EXPECT_FALSE(full);
  }
}

TEST(RowIndexTest, ReserveOfTooMuchIsResourceExhausted) {
  RowIndex index;
  const absl::Status s = index.Reserve(size_t{1} << 60);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_EQ(index.size(), 0u);
  EXPECT_EQ(index.Find(1), nullptr);
}

}  // namespace
}  // namespace petrel
