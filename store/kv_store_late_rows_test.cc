// kv_store_internal::LateRows, the queue the store's walks finish rows
// found a stage late from: each row is finished once a window of keys has
// passed, in the order queued, and every one by the final FinishBefore.
#include <cstddef>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

#include "store/kv_store_internal.h"

namespace petrel {
namespace {

using kv_store_internal::LateRows;
using Finished = std::vector<std::pair<size_t, int>>;

TEST(LateRowsTest, FinishesAWindowLaterInOrder) {
  LateRows<4, int> late;
  Finished done;
  auto finish = [&](size_t key, int row) { done.emplace_back(key, row); };
  late.Add(1, 10, finish);
  late.Add(2, 20, finish);
  late.Add(4, 40, finish);
  EXPECT_TRUE(done.empty());  // none of them a window (4 keys) back yet
  late.Add(5, 50, finish);    // finishes keys before 2: key 1
  EXPECT_EQ(done, (Finished{{1, 10}}));
  late.Add(9, 90, finish);  // keys before 6: 2, 4, 5
  EXPECT_EQ(done, (Finished{{1, 10}, {2, 20}, {4, 40}, {5, 50}}));
  late.FinishBefore(100, finish);
  EXPECT_EQ(done, (Finished{{1, 10}, {2, 20}, {4, 40}, {5, 50}, {9, 90}}));
  late.FinishBefore(100, finish);  // nothing left
  EXPECT_EQ(done.size(), 5u);
}

TEST(LateRowsTest, EveryKeyOfAWalkIsFinishedOnceInOrder) {
  LateRows<8, int> late;
  Finished done;
  auto finish = [&](size_t key, int row) { done.emplace_back(key, row); };
  Finished want;
  for (size_t i = 0; i < 1000; ++i) {
    const bool queued = i % 3 != 0 || i % 7 == 0;  // runs of queued keys
    if (!queued) continue;
    late.Add(i, static_cast<int>(i) * 2, finish);
    want.emplace_back(i, static_cast<int>(i) * 2);
    for (const auto& [key, row] : done) EXPECT_LE(key + 8, i);
  }
  late.FinishBefore(1000, finish);
  EXPECT_EQ(done, want);
}

}  // namespace
}  // namespace petrel
