#include "cluster/scheduler_watch.h"

#include "gtest/gtest.h"

namespace petrel {
namespace {

using Action = SchedulerWatch::Action;

const absl::Time kT0 = absl::FromUnixSeconds(1000);

SchedulerWatchOptions Options() {
  SchedulerWatchOptions o;
  o.silence = absl::Seconds(3);
  o.grace = absl::Seconds(10);
  o.rejoin_interval = absl::Seconds(1);
  return o;
}

TEST(SchedulerWatchTest, HeardSchedulerIsNotLost) {
  SchedulerWatch w(Options(), kT0);
  for (int s = 1; s < 100; ++s) {
    w.Heard(kT0 + absl::Seconds(s));
    EXPECT_EQ(w.Tick(kT0 + absl::Seconds(s) + absl::Milliseconds(2999)),
              Action::kNone);
  }
  EXPECT_FALSE(w.lost());
}

TEST(SchedulerWatchTest, SilenceLosesThenRejoinsEveryIntervalThenGivesUp) {
  SchedulerWatch w(Options(), kT0);
  EXPECT_EQ(w.Tick(kT0 + absl::Milliseconds(2999)), Action::kNone);
  EXPECT_EQ(w.Tick(kT0 + absl::Seconds(3)), Action::kLost);
  EXPECT_TRUE(w.lost());
  EXPECT_EQ(w.Tick(kT0 + absl::Milliseconds(3999)), Action::kNone);
  EXPECT_EQ(w.Tick(kT0 + absl::Seconds(4)), Action::kRejoin);
  EXPECT_EQ(w.Tick(kT0 + absl::Milliseconds(4500)), Action::kNone);
  EXPECT_EQ(w.Tick(kT0 + absl::Seconds(5)), Action::kRejoin);
  // The grace counts from when the scheduler was last heard (kT0).
  EXPECT_EQ(w.Tick(kT0 + absl::Milliseconds(9999)), Action::kRejoin);
  EXPECT_EQ(w.Tick(kT0 + absl::Seconds(10)), Action::kGiveUp);
  EXPECT_TRUE(w.gave_up());
  // Reported once; a late rejoin changes nothing.
  EXPECT_EQ(w.Tick(kT0 + absl::Seconds(20)), Action::kNone);
  EXPECT_EQ(w.Rejoined(kT0 + absl::Seconds(21)), absl::ZeroDuration());
  EXPECT_TRUE(w.gave_up());
}

TEST(SchedulerWatchTest, RejoinEndsTheLossAndRestartsTheClock) {
  SchedulerWatch w(Options(), kT0);
  ASSERT_EQ(w.Tick(kT0 + absl::Seconds(3)), Action::kLost);
  // Replies of the old connection may still come: they do not end the loss.
  w.Heard(kT0 + absl::Seconds(4));
  EXPECT_TRUE(w.lost());
  EXPECT_EQ(w.Rejoined(kT0 + absl::Seconds(7)), absl::Seconds(7));
  EXPECT_FALSE(w.lost());
  EXPECT_EQ(w.Rejoined(kT0 + absl::Seconds(8)), absl::ZeroDuration());
  // Well past the first grace: the clock started again at the rejoin.
  EXPECT_EQ(w.Tick(kT0 + absl::Seconds(9)), Action::kNone);
  EXPECT_EQ(w.Tick(kT0 + absl::Seconds(10)), Action::kLost);
  EXPECT_EQ(w.Tick(kT0 + absl::Seconds(16)), Action::kRejoin);
  EXPECT_EQ(w.Tick(kT0 + absl::Seconds(17)), Action::kGiveUp);
}

}  // namespace
}  // namespace petrel
