#include "store/kv_store.h"

#include <cstdint>
#include <random>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace petrel {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

using Store = KVStore<float>;

std::vector<float> Vals(const KVPairs<float>& p) { return p.vals.ToVector(); }
std::vector<int> Lens(const KVPairs<float>& p) { return p.lens.ToVector(); }

TEST(KVStoreTest, SumsPushesIntoRows) {
  Store store;
  ASSERT_TRUE(
      store.Push(std::vector<Key>{1, 2}, std::vector<float>{1, 2, 3, 4}).ok());
  ASSERT_TRUE(
      store.Push(std::vector<Key>{2, 1}, std::vector<float>{10, 20, 30, 40})
          .ok());
  EXPECT_EQ(store.num_keys(), 2u);
  KVPairs<float> got = store.Pull(SArray<Key>{1, 2});
  EXPECT_THAT(Vals(got), ElementsAre(31, 42, 13, 24));
  EXPECT_TRUE(got.lens.empty());
}

TEST(KVStoreTest, AssignOverwritesAndTakesTheNewWidth) {
  KVStore<int32_t> store(KVStore<int32_t>::Mode::kAssign);
  ASSERT_TRUE(store.Push(std::vector<Key>{7}, std::vector<int32_t>{1, 2}).ok());
  ASSERT_TRUE(store.Push(std::vector<Key>{7}, std::vector<int32_t>{5, 6}).ok());
  EXPECT_THAT(store.Get(7), ElementsAre(5, 6));
  ASSERT_TRUE(
      store.Push(std::vector<Key>{7}, std::vector<int32_t>{1, 2, 3}).ok());
  EXPECT_THAT(store.Get(7), ElementsAre(1, 2, 3));
  // An empty assignment leaves the key without a row.
  ASSERT_TRUE(store
                  .Push(std::vector<Key>{7, 8}, std::vector<int32_t>{4},
                        std::vector<int>{0, 1})
                  .ok());
  EXPECT_TRUE(store.Get(7).empty());
  EXPECT_EQ(store.num_keys(), 1u);
}

TEST(KVStoreTest, SumRejectsAnotherWidthAndAppliesNothing) {
  Store store;
  ASSERT_TRUE(store.Push(std::vector<Key>{5}, std::vector<float>{1, 2}).ok());
  // Key 9 is new and 5 fits, but key 5 again with 3 values fails all.
  std::vector<Key> keys{9, 5, 5};
  std::vector<float> vals{1, 1, 1, 1, 1, 1};
  absl::Status s = store.Push(keys, vals, std::vector<int>{1, 2, 3});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(),
              HasSubstr("key 5 has 2 values in the store, push has 3"));
  EXPECT_THAT(store.Get(5), ElementsAre(1, 2));
  EXPECT_TRUE(store.Get(9).empty());
  EXPECT_EQ(store.num_keys(), 1u);
  // A new key given twice with two widths is rejected too.
  s = store.Push(std::vector<Key>{4, 4}, std::vector<float>{1, 1, 1},
                 std::vector<int>{1, 2});
  EXPECT_THAT(s.message(), HasSubstr("key 4 has 1 values in the store"));
  EXPECT_TRUE(store.Get(4).empty());
  // The store still works after the rollbacks.
  ASSERT_TRUE(
      store.Push(std::vector<Key>{9, 4}, std::vector<float>{3, 4}).ok());
  EXPECT_THAT(store.Get(9), ElementsAre(3));
  EXPECT_EQ(store.num_keys(), 3u);
}

TEST(KVStoreTest, RejectsBadLengths) {
  Store store;
  std::vector<Key> keys{1, 2};
  EXPECT_EQ(store.Push(keys, std::vector<float>{1, 2, 3}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(store.Push(keys, std::vector<float>{1}, std::vector<int>{2, -1})
                  .message(),
              HasSubstr("negative length -1 for key 2"));
  EXPECT_THAT(
      store.Push(keys, std::vector<float>{1}, std::vector<int>{1, 1}).message(),
      HasSubstr("lens sum to 2 but 1 values follow"));
  EXPECT_EQ(store.num_keys(), 0u);
}

TEST(KVStoreTest, DuplicatedKeysAreSummedEachTime) {
  Store store;
  ASSERT_TRUE(
      store.Push(std::vector<Key>{3, 3, 4, 3}, std::vector<float>{1, 2, 5, 4})
          .ok());
  EXPECT_THAT(store.Get(3), ElementsAre(7));
  ASSERT_TRUE(
      store.Push(std::vector<Key>{3, 3}, std::vector<float>{1, 1}).ok());
  EXPECT_THAT(store.Get(3), ElementsAre(9));
  EXPECT_THAT(store.Get(4), ElementsAre(5));
}

TEST(KVStoreTest, KeysNeverPushedHaveLengthZero) {
  Store store;
  ASSERT_TRUE(store.Push(std::vector<Key>{1}, std::vector<float>{1, 2}).ok());
  KVPairs<float> got = store.Pull(SArray<Key>{2, 1, 3});
  EXPECT_THAT(Vals(got), ElementsAre(1, 2));
  EXPECT_THAT(Lens(got), ElementsAre(0, 2, 0));
  EXPECT_TRUE(store.Pull(SArray<Key>{4}).vals.empty());
  EXPECT_TRUE(store.Pull(SArray<Key>{}).vals.empty());
}

TEST(KVStoreTest, MixedWidthsPullWithLens) {
  Store store;
  ASSERT_TRUE(store
                  .Push(std::vector<Key>{1, 2, 3},
                        std::vector<float>{1, 2, 3, 4, 5, 6},
                        std::vector<int>{1, 2, 3})
                  .ok());
  KVPairs<float> got = store.Pull(SArray<Key>{3, 1, 2});
  EXPECT_THAT(Vals(got), ElementsAre(4, 5, 6, 1, 2, 3));
  EXPECT_THAT(Lens(got), ElementsAre(3, 1, 2));
}

// A store of one width answers a pull in one walk; a key without a row
// anywhere in the request (here after more keys than the walk prefetches
// ahead) sends it to the general path, which answers with lens.
TEST(KVStoreTest, OneWidthPullsMatchTheRowsAndFallBackOnMissingKeys) {
  for (size_t width : {1, 3, 16}) {
    SCOPED_TRACE(width);
    Store store;
    constexpr size_t kKeys = 1000;
    std::vector<Key> keys;
    std::vector<float> vals;
    for (size_t i = 0; i < kKeys; ++i) {
      keys.push_back(i * 7919);
      for (size_t j = 0; j < width; ++j) vals.push_back(i * 100.0f + j);
    }
    ASSERT_TRUE(store.Push(keys, vals).ok());
    // Every key, backwards, with duplicates.
    std::vector<Key> asked;
    std::vector<float> want;
    for (size_t i = kKeys; i-- > 0;) {
      for (int copy = 0; copy < (i % 5 == 0 ? 2 : 1); ++copy) {
        asked.push_back(keys[i]);
        for (size_t j = 0; j < width; ++j) want.push_back(i * 100.0f + j);
      }
    }
    KVPairs<float> got = store.Pull(SArray<Key>::CopyOf(asked));
    EXPECT_EQ(Vals(got), want);
    EXPECT_TRUE(got.lens.empty());
    // A missing key late in the request.
    asked.insert(asked.begin() + 500, 1);
    got = store.Pull(SArray<Key>::CopyOf(asked));
    ASSERT_EQ(got.lens.size(), asked.size());
    EXPECT_EQ(got.lens[500], 0);
    EXPECT_EQ(got.lens[0], static_cast<int>(width));
    EXPECT_EQ(Vals(got), want);
  }
}

TEST(KVStoreTest, PullsOnAPoolMatchOneThreadAndFallBackOnMissingKeys) {
  ShardPool pool(3);
  ASSERT_TRUE(pool.Start().ok());
  for (size_t width : {1, 5, 16}) {
    SCOPED_TRACE(width);
    Store store;
    store.set_pull_pool(&pool);
    const size_t keys_n = 3 * Store::kParallelPullKeys + 17;
    std::vector<Key> keys;
    std::vector<float> vals;
    for (size_t i = 0; i < keys_n; ++i) {
      keys.push_back(i * 7919 + 3);
      for (size_t j = 0; j < width; ++j) vals.push_back(i * 100.0f + j);
    }
    ASSERT_TRUE(store.Push(keys, vals).ok());
    std::mt19937_64 rng(5);
    std::vector<Key> asked;
    std::vector<float> want;
    for (size_t k = 0; k < keys_n + 1000; ++k) {
      const size_t i = rng() % keys_n;
      asked.push_back(keys[i]);
      for (size_t j = 0; j < width; ++j) want.push_back(i * 100.0f + j);
    }
    KVPairs<float> got = store.Pull(SArray<Key>::CopyOf(asked));
    EXPECT_EQ(Vals(got), want);
    EXPECT_TRUE(got.lens.empty());
    // The same pull on the calling thread alone.
    store.set_pull_pool(nullptr);
    EXPECT_EQ(Vals(store.Pull(SArray<Key>::CopyOf(asked))), want);
    store.set_pull_pool(&pool);
    // A missing key in the last chunk: the whole pull takes two passes.
    asked.insert(asked.end() - 3, 1);
    got = store.Pull(SArray<Key>::CopyOf(asked));
    ASSERT_EQ(got.lens.size(), asked.size());
    EXPECT_EQ(got.lens[asked.size() - 4], 0);
    EXPECT_EQ(got.lens[0], static_cast<int>(width));
    EXPECT_EQ(Vals(got), want);
  }
}

TEST(KVStoreTest, LargeRowsAreSharedWithOneKeyPullsAndCopiedOnWrite) {
  const size_t n = Store::kMaxSlabRowBytes / sizeof(float) + 1;
  Store store;
  ASSERT_TRUE(store.Push(std::vector<Key>{1}, std::vector<float>(n, 1)).ok());
  KVPairs<float> first = store.Pull(SArray<Key>{1});
  KVPairs<float> again = store.Pull(SArray<Key>{1});
  EXPECT_EQ(first.vals.data(), again.vals.data());  // no copy
  ASSERT_TRUE(store.Push(std::vector<Key>{1}, std::vector<float>(n, 2)).ok());
  EXPECT_EQ(first.vals[0], 1);  // the answer in flight kept its bytes
  EXPECT_EQ(first.vals[n - 1], 1);
  EXPECT_EQ(store.Get(1)[n - 1], 3);
  // Not shared any more: summed in place.
  first = again = {};
  const float* row = store.Pull(SArray<Key>{1}).vals.data();
  ASSERT_TRUE(store.Push(std::vector<Key>{1}, std::vector<float>(n, 1)).ok());
  EXPECT_EQ(store.Pull(SArray<Key>{1}).vals.data(), row);
  EXPECT_EQ(store.Get(1)[0], 4);
}

TEST(KVStoreTest, SmallRowsAreCopiedOutOfSlabs) {
  Store store;
  ASSERT_TRUE(store.Push(std::vector<Key>{1}, std::vector<float>{1, 2}).ok());
  KVPairs<float> got = store.Pull(SArray<Key>{1});
  ASSERT_TRUE(store.Push(std::vector<Key>{1}, std::vector<float>{1, 1}).ok());
  EXPECT_THAT(Vals(got), ElementsAre(1, 2));
  EXPECT_THAT(store.Get(1), ElementsAre(2, 3));
}

// The values a prepared push reads stay alive until CommitPush.
absl::Status PushSlice(Store* store, Key key, size_t offset, size_t total,
                       const std::vector<float>& vals) {
  absl::Status s = store->PreparePushSlice(key, offset, total, vals);
  if (s.ok()) store->CommitPush();
  return s;
}

TEST(KVStoreTest, SlicesStartAsZerosAndSum) {
  for (size_t total : {size_t{10}, Store::kMaxSlabRowBytes}) {  // slab, large
    Store store;
    ASSERT_TRUE(PushSlice(&store, 1, 2, total, {1, 2}).ok());
    ASSERT_TRUE(PushSlice(&store, 1, 3, total, {5}).ok());
    std::vector<float> row = store.Get(1);
    ASSERT_EQ(row.size(), total);
    EXPECT_THAT(std::vector<float>(row.begin(), row.begin() + 5),
                ElementsAre(0, 0, 1, 7, 0));
    absl::Status s = PushSlice(&store, 1, 0, total + 1, {1});
    EXPECT_THAT(s.message(), HasSubstr("push has"));
    EXPECT_EQ(PushSlice(&store, 1, total, total, {1}).code(),
              absl::StatusCode::kInvalidArgument);
  }
}

TEST(KVStoreTest, AssignSlicesReshapeTheRow) {
  Store store(Store::Mode::kAssign);
  ASSERT_TRUE(store.Push(std::vector<Key>{1}, std::vector<float>{9, 9}).ok());
  ASSERT_TRUE(PushSlice(&store, 1, 1, 3, {4}).ok());
  EXPECT_THAT(store.Get(1), ElementsAre(0, 4, 0));
  ASSERT_TRUE(PushSlice(&store, 1, 0, 3, {5}).ok());
  EXPECT_THAT(store.Get(1), ElementsAre(5, 4, 0));
}

TEST(KVStoreTest, HoldsAMillionKeysAcrossRehashes) {
  // 10^6 keys (the index rehashed ~17 times) pushed in batches, the first
  // batch summed a second time, all read back in one pull.
  constexpr size_t kKeys = 1000000;
  constexpr size_t kBatch = 100000;
  KVStore<int32_t> store;
  std::vector<Key> keys(kBatch);
  std::vector<int32_t> vals(kBatch);
  for (size_t b = 0; b < kKeys; b += kBatch) {
    for (size_t i = 0; i < kBatch; ++i) {
      keys[i] = (b + i) * 0x9E3779B97F4A7C15ull;  // spread over uint64
      vals[i] = static_cast<int32_t>(b + i);
    }
    ASSERT_TRUE(store.Push(keys, vals).ok());
  }
  for (size_t i = 0; i < kBatch; ++i) keys[i] = i * 0x9E3779B97F4A7C15ull;
  ASSERT_TRUE(store.Push(keys, std::vector<int32_t>(kBatch, 1)).ok());
  EXPECT_EQ(store.num_keys(), kKeys);
  SArray<Key> probe(kKeys);
  for (size_t i = 0; i < kKeys; ++i) probe[i] = i * 0x9E3779B97F4A7C15ull;
  KVPairs<int32_t> got = store.Pull(probe);
  ASSERT_EQ(got.vals.size(), kKeys);
  EXPECT_TRUE(got.lens.empty());
  size_t wrong = 0;
  const int32_t* v = got.vals.data();
  for (size_t i = 0; i < kKeys; ++i) {
    wrong += v[i] != static_cast<int32_t>(i + (i < kBatch ? 1 : 0));
  }
  EXPECT_EQ(wrong, 0u);
}

TEST(KVStoreTest, GrowsOverManySlabs) {
  // Rows of 4 KiB: 512 to a 2 MiB slab, so 4,096 keys fill 8 slabs.
  constexpr size_t kWidth = 1024;
  constexpr size_t kKeys = 4096;
  KVStore<int32_t> store;
  std::vector<Key> keys(kKeys);
  std::vector<int32_t> vals(kKeys * kWidth);
  for (size_t i = 0; i < kKeys; ++i) {
    keys[i] = i;
    vals[i * kWidth] = static_cast<int32_t>(i);
    vals[i * kWidth + kWidth - 1] = -static_cast<int32_t>(i);
  }
  ASSERT_TRUE(store.Push(keys, vals).ok());
  EXPECT_GE(store.MemoryBytes(), 8u * (2u << 20));
  KVPairs<int32_t> got = store.Pull(SArray<Key>{0, 1234, 4095});
  ASSERT_EQ(got.vals.size(), 3 * kWidth);
  EXPECT_EQ(got.vals[kWidth], 1234);
  EXPECT_EQ(got.vals[2 * kWidth - 1], -1234);
  EXPECT_EQ(got.vals[3 * kWidth - 1], -4095);
}

TEST(KVStoreTest, KeyZeroAndTheLargestKeyAreKeys) {
  KVStore<int64_t> store;
  const Key top = ~Key{0};
  ASSERT_TRUE(
      store.Push(std::vector<Key>{0, top}, std::vector<int64_t>{1, 2}).ok());
  EXPECT_THAT(store.Get(0), ElementsAre(1));
  EXPECT_THAT(store.Get(top), ElementsAre(2));
}

TEST(KVStoreTest, PrepareThenCommitApplies) {
  Store store;
  ASSERT_TRUE(store.Push(std::vector<Key>{1}, std::vector<float>{1}).ok());
  std::vector<Key> keys{1, 2};
  std::vector<float> vals{5, 6};
  ASSERT_TRUE(store.PreparePush(keys, vals).ok());
  store.CommitPush();
  EXPECT_THAT(store.Get(1), ElementsAre(6));
  EXPECT_THAT(store.Get(2), ElementsAre(6));
}

TEST(KVStoreOnePassTest, TakenForOneStoredWidthOrAssign) {
  Store store;
  std::vector<Key> keys{1, 2};
  std::vector<float> vals{1, 2, 3, 4};
  ASSERT_TRUE(store.PreparePush(keys, vals).ok());
  EXPECT_TRUE(store.one_pass_prepared());  // an empty store
  store.CommitPush();
  EXPECT_FALSE(store.one_pass_prepared());
  ASSERT_TRUE(store.PreparePush(keys, vals).ok());
  EXPECT_TRUE(store.one_pass_prepared());  // every row has 2 values
  store.CommitPush();
  EXPECT_THAT(store.Get(1), ElementsAre(2, 4));
  EXPECT_THAT(store.Get(2), ElementsAre(6, 8));
  // Lengths per key: two passes.
  std::vector<int> lens{2, 2};
  ASSERT_TRUE(store.PreparePush(keys, vals, lens).ok());
  EXPECT_FALSE(store.one_pass_prepared());
  store.CommitPush();
  EXPECT_THAT(store.Get(1), ElementsAre(3, 6));
  // Another width for a new key: two passes, and the store now holds two.
  std::vector<Key> three{3};
  std::vector<float> three_vals{7, 7, 7};
  ASSERT_TRUE(store.PreparePush(three, three_vals).ok());
  EXPECT_FALSE(store.one_pass_prepared());
  store.CommitPush();
  ASSERT_TRUE(store.PreparePush(keys, vals).ok());
  EXPECT_FALSE(store.one_pass_prepared());
  store.CommitPush();
  EXPECT_THAT(store.Get(1), ElementsAre(4, 8));
  // kAssign never rejects a width: one pass over rows of two widths, and
  // the key of three values takes two.
  KVStore<int32_t> assign(KVStore<int32_t>::Mode::kAssign);
  ASSERT_TRUE(assign
                  .Push(std::vector<Key>{1, 2}, std::vector<int32_t>{1, 2, 3},
                        std::vector<int>{1, 2})
                  .ok());
  std::vector<Key> both{2, 1, 3};
  std::vector<int32_t> both_vals{5, 6, 7, 8, 9, 10};
  ASSERT_TRUE(assign.PreparePush(both, both_vals).ok());
  EXPECT_TRUE(assign.one_pass_prepared());
  assign.CommitPush();
  EXPECT_THAT(assign.Get(2), ElementsAre(5, 6));
  EXPECT_THAT(assign.Get(1), ElementsAre(7, 8));
  EXPECT_THAT(assign.Get(3), ElementsAre(9, 10));
  EXPECT_EQ(assign.num_keys(), 3u);
}

TEST(KVStoreOnePassTest, AnotherWidthAfterASecondWidthIsRejectedWhole) {
  Store store;
  ASSERT_TRUE(
      store.Push(std::vector<Key>{1, 2}, std::vector<float>{1, 2}).ok());
  ASSERT_TRUE(store.Push(std::vector<Key>{3}, std::vector<float>{3, 3}).ok());
  // Key 4 is new and fits, key 1 has one value: two passes reject it all.
  std::vector<Key> keys{4, 1};
  std::vector<float> vals{5, 5, 6, 6};
  absl::Status s = store.PreparePush(keys, vals);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(),
              HasSubstr("key 1 has 1 values in the store, push has 2"));
  EXPECT_FALSE(store.one_pass_prepared());
  EXPECT_TRUE(store.Get(4).empty());
  EXPECT_THAT(store.Get(1), ElementsAre(1));
  EXPECT_EQ(store.num_keys(), 3u);
}

TEST(KVStoreOnePassTest, AWidthWhoseRowsWereAllUndoneDoesNotCount) {
  Store store;
  ASSERT_TRUE(store.Push(std::vector<Key>{5}, std::vector<float>{1, 2}).ok());
  // Key 9 gets a row of one value, undone with the rest of the push.
  EXPECT_FALSE(store
                   .Push(std::vector<Key>{9, 5}, std::vector<float>{1, 1, 1},
                         std::vector<int>{1, 2, 3})
                   .ok());
  std::vector<Key> keys{9, 5};
  std::vector<float> vals{1, 1, 2, 2};
  ASSERT_TRUE(store.PreparePush(keys, vals).ok());
  EXPECT_TRUE(store.one_pass_prepared());
  store.CommitPush();
  EXPECT_THAT(store.Get(9), ElementsAre(1, 1));
  EXPECT_THAT(store.Get(5), ElementsAre(3, 4));
}

TEST(KVStoreOnePassTest, ReservesRowsBeforeCommit) {
  // Rows of 4 KiB, 512 to a slab: 1,500 new keys need 3 slabs, mapped by
  // PreparePush, so that CommitPush cannot run out.
  constexpr size_t kWidth = 1024;
  constexpr size_t kKeys = 1500;
  KVStore<int32_t> store;
  std::vector<Key> keys(kKeys);
  std::vector<int32_t> vals(kKeys * kWidth, 1);
  for (size_t i = 0; i < kKeys; ++i) keys[i] = i * 7919;
  ASSERT_TRUE(store.PreparePush(keys, vals).ok());
  ASSERT_TRUE(store.one_pass_prepared());
  EXPECT_GE(store.MemoryBytes(), 3u * (2u << 20));
  EXPECT_EQ(store.num_keys(), 0u);
  store.CommitPush();
  EXPECT_EQ(store.num_keys(), kKeys);
  const size_t bytes = store.MemoryBytes();
  // The same keys again reserve at most one push's rows more (and the
  // index room for as many keys, 64 KiB).
  ASSERT_TRUE(store.Push(keys, vals).ok());
  EXPECT_LE(store.MemoryBytes(), bytes + 3u * (2u << 20) + (64u << 10));
  KVPairs<int32_t> got = store.Pull(SArray<Key>{keys[0], keys[kKeys - 1]});
  EXPECT_EQ(got.vals[0], 2);
  EXPECT_EQ(got.vals[2 * kWidth - 1], 2);
}

TEST(KVStoreOnePassTest, AssignReusesFreedRows) {
  KVStore<int32_t> store(KVStore<int32_t>::Mode::kAssign);
  std::vector<Key> keys{1, 2, 3};
  ASSERT_TRUE(store.Push(keys, std::vector<int32_t>{1, 2, 3}).ok());
  // The three rows of one value are freed as the keys take two values...
  ASSERT_TRUE(store.Push(keys, std::vector<int32_t>(6, 4)).ok());
  const size_t bytes = store.MemoryBytes();
  // ...and new keys of one value take them back.
  std::vector<Key> fresh{4, 5, 6};
  std::vector<int32_t> fresh_vals{7, 8, 9};
  ASSERT_TRUE(store.PreparePush(fresh, fresh_vals).ok());
  EXPECT_TRUE(store.one_pass_prepared());
  store.CommitPush();
  EXPECT_EQ(store.MemoryBytes(), bytes);
  EXPECT_THAT(store.Pull(SArray<Key>{1, 4, 6}).lens.ToVector(),
              ElementsAre(2, 1, 1));
  EXPECT_THAT(store.Get(1), ElementsAre(4, 4));
  EXPECT_THAT(store.Get(6), ElementsAre(9));
  EXPECT_EQ(store.num_keys(), 6u);
}

// Pushes with duplicates near and far apart (inside and beyond the
// prefetch window), new and old keys, in one and in two passes: the two
// stores agree.
TEST(KVStoreOnePassTest, AgreesWithTwoPassesOnDuplicates) {
  for (size_t width : {1, 3, 16}) {
    KVStore<int64_t> one;
    KVStore<int64_t> two;
    two.set_one_pass_push(false);
    std::mt19937_64 rng(width);
    std::vector<Key> keys(2000);
    std::vector<int64_t> vals(keys.size() * width);
    for (int push = 0; push < 5; ++push) {
      for (Key& k : keys) k = rng() % (500 * (push + 1));
      for (int64_t& v : vals) v = static_cast<int64_t>(rng() % 1000);
      ASSERT_TRUE(one.PreparePush(keys, vals).ok());
      EXPECT_TRUE(one.one_pass_prepared());
      one.CommitPush();
      ASSERT_TRUE(two.Push(keys, vals).ok());
    }
    SArray<Key> all(2500);
    for (size_t k = 0; k < all.size(); ++k) all[k] = k;
    EXPECT_EQ(one.Pull(all).vals.ToVector(), two.Pull(all).vals.ToVector())
        << "width " << width;
    EXPECT_EQ(one.num_keys(), two.num_keys());
  }
}

}  // namespace
}  // namespace petrel
