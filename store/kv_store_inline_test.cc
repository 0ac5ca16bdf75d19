// KVStore's rows of one 4-byte value, kept in their index slots (see
// kv_store.h): the same behaviour as slab rows through every path that
// reads or writes a row.
#include <cstdint>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "base/shard_pool.h"
#include "store/kv_store.h"

namespace petrel {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

using Store = KVStore<float>;

std::vector<float> Vals(const KVPairs<float>& p) { return p.vals.ToVector(); }

TEST(KVStoreInlineTest, OneValueRowsSumCopyAndPullInBothPasses) {
  Store store;
  std::vector<Key> keys{10, 20, 30};
  std::vector<float> vals{1, 2, 3};
  ASSERT_TRUE(store.PreparePush(keys, vals).ok());
  EXPECT_TRUE(store.one_pass_prepared());
  store.CommitPush();
  EXPECT_THAT(store.Get(20), ElementsAre(2));
  // Two passes (lens) and a key given twice.
  ASSERT_TRUE(store
                  .Push(std::vector<Key>{20, 20, 30},
                        std::vector<float>{0.5f, 0.25f, 4},
                        std::vector<int>{1, 1, 1})
                  .ok());
  EXPECT_EQ(store.num_keys(), 3u);
  EXPECT_THAT(store.Get(20), ElementsAre(2.75f));
  EXPECT_THAT(Vals(store.Pull(SArray<Key>{30, 10, 20, 30})),
              ElementsAre(7, 1, 2.75f, 7));
  EXPECT_THAT(Vals(store.Pull(SArray<Key>{20})), ElementsAre(2.75f));
  // A missing key: the two-pass pull, with lens.
  KVPairs<float> got = store.Pull(SArray<Key>{10, 99, 30});
  EXPECT_THAT(Vals(got), ElementsAre(1, 7));
  EXPECT_THAT(got.lens.ToVector(), ElementsAre(1, 0, 1));
  // A slice of a key of one value starts at zero.
  std::vector<float> six{6};
  ASSERT_TRUE(store.PreparePushSlice(40, 0, 1, six).ok());
  store.CommitPush();
  EXPECT_THAT(store.Get(40), ElementsAre(6));
}

TEST(KVStoreInlineTest, ASumOfAnotherWidthIsRejectedWithoutOnePass) {
  Store store;
  ASSERT_TRUE(
      store.Push(std::vector<Key>{1, 2}, std::vector<float>{1, 2}).ok());
  std::vector<Key> keys{3, 1};
  std::vector<float> vals{1, 1, 1, 1};
  absl::Status s = store.PreparePush(keys, vals);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("key 1 has 1 values"));
  EXPECT_FALSE(store.one_pass_prepared());
  EXPECT_THAT(store.Get(1), ElementsAre(1));
  EXPECT_TRUE(store.Get(3).empty());
  EXPECT_EQ(store.num_keys(), 2u);
  // A row of another width beside them: pulls answer lens.
  ASSERT_TRUE(store.Push(std::vector<Key>{3}, std::vector<float>{5, 6}).ok());
  KVPairs<float> got = store.Pull(SArray<Key>{1, 3});
  EXPECT_THAT(Vals(got), ElementsAre(1, 5, 6));
  EXPECT_THAT(got.lens.ToVector(), ElementsAre(1, 2));
}

TEST(KVStoreInlineTest, AssignMovesKeysBetweenSlotsAndSlabs) {
  Store store(Store::Mode::kAssign);
  ASSERT_TRUE(
      store.Push(std::vector<Key>{1, 2}, std::vector<float>{1, 2}).ok());
  std::vector<float> wide(32);
  for (size_t i = 0; i < wide.size(); ++i) wide[i] = static_cast<float>(i);
  // One pass: key 1 leaves its slot for a slab row of 16.
  std::vector<Key> one_two{1, 2};
  ASSERT_TRUE(store.PreparePush(one_two, wide).ok());
  EXPECT_TRUE(store.one_pass_prepared());
  store.CommitPush();
  EXPECT_EQ(store.Get(1).size(), 16u);
  EXPECT_EQ(store.Get(2)[15], 31);
  // And back, in one pass and in two.
  ASSERT_TRUE(store.Push(std::vector<Key>{1}, std::vector<float>{9}).ok());
  ASSERT_TRUE(
      store
          .Push(std::vector<Key>{2}, std::vector<float>{8}, std::vector<int>{1})
          .ok());
  EXPECT_THAT(store.Get(1), ElementsAre(9));
  EXPECT_THAT(store.Get(2), ElementsAre(8));
  EXPECT_EQ(store.num_keys(), 2u);
  EXPECT_THAT(Vals(store.Pull(SArray<Key>{2, 1})), ElementsAre(8, 9));
  // A push of no values takes the row away.
  ASSERT_TRUE(
      store.Push(std::vector<Key>{1}, std::vector<float>{}, std::vector<int>{0})
          .ok());
  EXPECT_TRUE(store.Get(1).empty());
  EXPECT_EQ(store.num_keys(), 1u);
}

TEST(KVStoreInlineTest, IntRowsOfOneValueAndPooledPulls) {
  KVStore<int32_t> ints;
  ASSERT_TRUE(
      ints.Push(std::vector<Key>{5, 6}, std::vector<int32_t>{-3, 7}).ok());
  ASSERT_TRUE(
      ints.Push(std::vector<Key>{6, 5}, std::vector<int32_t>{1, 1}).ok());
  EXPECT_THAT(ints.Get(5), ElementsAre(-2));
  EXPECT_THAT(ints.Get(6), ElementsAre(8));
  ShardPool pool(2);
  ASSERT_TRUE(pool.Start().ok());
  Store store;
  store.set_pull_pool(&pool);
  const size_t n = 2 * Store::kParallelPullKeys + 5;
  std::vector<Key> keys;
  std::vector<float> vals;
  for (size_t i = 0; i < n; ++i) {
    keys.push_back(i * 104729 + 1);
    vals.push_back(static_cast<float>(i));
  }
  ASSERT_TRUE(store.Push(keys, vals).ok());
  ASSERT_TRUE(store.Push(keys, vals).ok());
  std::vector<Key> asked(keys.rbegin(), keys.rend());
  std::vector<float> want;
  for (size_t i = n; i-- > 0;) want.push_back(2.0f * i);
  EXPECT_EQ(Vals(store.Pull(SArray<Key>::CopyOf(asked))), want);
  store.set_pull_pool(nullptr);
}

}  // namespace
}  // namespace petrel
