#include "base/startup_progress.h"

#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace petrel {
namespace {

TEST(StartupProgressTest, DescribesTheStepUnderWayAndHowFarItGot) {
  StartupProgress progress;
  EXPECT_EQ(progress.Describe(), "");
  progress.Begin("filling dense table 3 (1000 rows, 0.5 MiB)", 1000);
  progress.Advance(410);
  EXPECT_EQ(progress.Describe(),
            "filling dense table 3 (1000 rows, 0.5 MiB): 41% after 0");
  progress.Advance(5000);  // never past the total
  EXPECT_TRUE(absl::StrContains(progress.Describe(), ": 100% after"));
  progress.End();
  EXPECT_EQ(progress.Describe(), "");
}

TEST(StartupProgressTest, ACancelNamesTheReasonAndTheWork) {
  StartupProgress progress;
  EXPECT_FALSE(progress.cancelled());
  progress.Begin("loading checkpoint D/ckpt-00000003", 4);
  progress.Advance(1);
  progress.Cancel("SIGTERM received");
  progress.Cancel("SIGINT received");  // the first reason stays
  ASSERT_TRUE(progress.cancelled());
  const absl::Status s = progress.CancelledError();
  EXPECT_TRUE(absl::IsCancelled(s));
  EXPECT_EQ(s.message(),
            "SIGTERM received while loading checkpoint D/ckpt-00000003: 25% "
            "after 0");
  progress.End();
  EXPECT_EQ(progress.CancelledError().message(), "SIGTERM received");
}

TEST(StartupProgressTest, AdvancesFromManyThreadsAddUp) {
  StartupProgress progress(absl::ZeroDuration());  // logs every Advance
  progress.Begin("filling", 4000);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&progress] {
      for (int i = 0; i < 500; ++i) progress.Advance(1);
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(progress.Describe(), "filling: 50% after 0");
}

}  // namespace
}  // namespace petrel
