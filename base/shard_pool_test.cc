#include "base/shard_pool.h"

#include <atomic>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace petrel {
namespace {

TEST(ShardPoolTest, RunsEveryTaskOnceAndReturnsAfterAll) {
  ShardPool pool(3);
  ASSERT_TRUE(pool.Start().ok());
  for (int round = 0; round < 2000; ++round) {
    const int n = 1 + round % 9;
    std::vector<std::atomic<int>> calls(n);
    pool.Run(n, [&](int task) { calls[task].fetch_add(1); });
    for (int i = 0; i < n; ++i) ASSERT_EQ(calls[i].load(), 1) << round;
  }
}

TEST(ShardPoolTest, WaitsForATaskLongerThanItsSpin) {
  // Every task outlasts the join's spin, so whichever thread runs the last
  // one, the caller must block for it rather than return after spinning.
  ShardPool pool(2);
  ASSERT_TRUE(pool.Start().ok());
  const absl::Duration work = 4 * ShardPool::kJoinSpin;
  for (int round = 0; round < 20; ++round) {
    std::vector<std::atomic<bool>> done(4);
    pool.Run(4, [&](int task) {
      const absl::Time until = absl::Now() + work;
      while (absl::Now() < until) std::this_thread::yield();  // simulated work
      done[task].store(true);
    });
    for (int i = 0; i < 4; ++i) ASSERT_TRUE(done[i].load()) << round;
  }
}

TEST(ShardPoolTest, RunsOnTheCallerBeforeStartAndAfterStop) {
  ShardPool pool(4);
  const std::thread::id caller = std::this_thread::get_id();
  int ran = 0;
  pool.Run(3, [&](int) {
    EXPECT_EQ(std::this_thread::get_id(), caller);
    ++ran;
  });
  ASSERT_TRUE(pool.Start().ok());
  pool.Stop();
  pool.Run(2, [&](int) {
    EXPECT_EQ(std::this_thread::get_id(), caller);
    ++ran;
  });
  EXPECT_EQ(ran, 5);
}

}  // namespace
}  // namespace petrel
