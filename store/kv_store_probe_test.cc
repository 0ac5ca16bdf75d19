// KVStore with an index near its 3/4 limit, where many keys are not in
// their home bucket: the one-pass push and the one-walk pull look those
// up a stage later (see kv_store.h) and must still agree with a plain map,
// duplicates inside the prefetch window included, in both modes.
#include <cstdint>
#include <map>
#include <random>
#include <vector>

#include "gtest/gtest.h"

#include "base/shard_pool.h"
#include "store/kv_store.h"

namespace petrel {
namespace {

using Store = KVStore<int32_t>;
using Rows = std::map<Key, std::vector<int32_t>>;

void Apply(Store::Mode mode, const std::vector<Key>& keys,
           const std::vector<int32_t>& vals, size_t width, Rows* rows) {
  for (size_t i = 0; i < keys.size(); ++i) {
    std::vector<int32_t>& row = (*rows)[keys[i]];
    row.resize(width, 0);
    for (size_t j = 0; j < width; ++j) {
      const int32_t v = vals[i * width + j];
      row[j] = mode == Store::Mode::kSum ? row[j] + v : v;
    }
  }
}

// The pull of `keys` against the map, on the calling thread and on a pool.
void ExpectPulls(Store& store, const Rows& rows, const SArray<Key>& keys,
                 size_t width, ShardPool* pool) {
  std::vector<int32_t> want;
  for (Key k : keys) {
    const std::vector<int32_t>& row = rows.at(k);
    want.insert(want.end(), row.begin(), row.end());
  }
  for (ShardPool* p : {static_cast<ShardPool*>(nullptr), pool}) {
    store.set_pull_pool(p);
    KVPairs<int32_t> got = store.Pull(keys);
    EXPECT_TRUE(got.lens.empty()) << "width " << width;
    EXPECT_EQ(got.vals.ToVector(), want) << "width " << width;
  }
  store.set_pull_pool(nullptr);
}

TEST(KVStoreProbeTest, KeysPastTheirHomeBucketAgreeWithAMap) {
  ShardPool pool(2);
  ASSERT_TRUE(pool.Start().ok());
  for (Store::Mode mode : {Store::Mode::kSum, Store::Mode::kAssign}) {
    for (size_t width : {1, 3, 16}) {
      SCOPED_TRACE(testing::Message()
                   << "mode " << static_cast<int>(mode) << " width " << width);
      Store store(mode);
      Rows rows;
      std::mt19937_64 rng(width * 2 + static_cast<int>(mode));
      // 12,200 keys in one push fill an index of 16,384 slots to 74%.
      std::vector<Key> keys(12200);
      for (size_t i = 0; i < keys.size(); ++i) keys[i] = rng();
      // Duplicates 1 to 150 keys apart, inside and past the prefetch windows.
      for (size_t i = 150; i < keys.size(); i += 7) {
        keys[i] = keys[i - 1 - rng() % 150];
      }
      std::vector<int32_t> vals(keys.size() * width);
      for (int32_t& v : vals) v = static_cast<int32_t>(rng() % 100);
      ASSERT_TRUE(store.PreparePush(keys, vals).ok());
      EXPECT_TRUE(store.one_pass_prepared());
      store.CommitPush();
      Apply(mode, keys, vals, width, &rows);
      ASSERT_EQ(store.num_keys(), rows.size());
      // Small pushes of stored keys (the index does not grow), with
      // duplicates close together.
      std::vector<Key> resident;
      for (const auto& [k, row] : rows) resident.push_back(k);
      for (int push = 0; push < 20; ++push) {
        std::vector<Key> some(200);
        for (size_t i = 0; i < some.size(); ++i) {
          some[i] = i % 5 == 4 ? some[i - 1 - rng() % 4]
                               : resident[rng() % resident.size()];
        }
        std::vector<int32_t> more(some.size() * width);
        for (int32_t& v : more) v = static_cast<int32_t>(rng() % 100);
        ASSERT_TRUE(store.PreparePush(some, more).ok());
        EXPECT_TRUE(store.one_pass_prepared());
        store.CommitPush();
        Apply(mode, some, more, width, &rows);
      }
      ASSERT_EQ(store.num_keys(), rows.size());
      // Every key, shuffled and with repeats (a pull of over 8,192 keys
      // goes over the pool).
      SArray<Key> ask(resident.size() + 100);
      for (size_t i = 0; i < ask.size(); ++i) {
        ask[i] = resident[rng() % resident.size()];
      }
      ExpectPulls(store, rows, ask, width, &pool);
      ExpectPulls(store, rows, SArray<Key>(std::vector<Key>(resident)), width,
                  &pool);
      // A missing key still sends the pull to two passes.
      SArray<Key> with_missing = SArray<Key>::CopyOf(ask.data(), ask.size());
      with_missing[with_missing.size() / 2] = 12345;  // ~never a stored key
      if (rows.count(12345) == 0) {
        KVPairs<int32_t> got = store.Pull(with_missing);
        ASSERT_EQ(got.lens.size(), with_missing.size());
        EXPECT_EQ(got.lens[with_missing.size() / 2], 0);
        EXPECT_EQ(got.vals.size(), (with_missing.size() - 1) * width);
      }
    }
  }
}

}  // namespace
}  // namespace petrel
