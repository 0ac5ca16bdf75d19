#include "cluster/map_hold.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "base/metrics.h"

namespace petrel {
namespace {

Message Request(int sender, uint64_t map_version, int timestamp) {
  Message msg;
  msg.meta.set_sender(sender);
  msg.meta.set_request(true);
  msg.meta.set_map_version(map_version);
  msg.meta.set_timestamp(timestamp);
  return msg;
}

std::vector<int> Timestamps(const std::vector<Message>& msgs) {
  std::vector<int> out;
  for (const Message& m : msgs) out.push_back(m.meta.timestamp());
  return out;
}

TEST(MapHoldTest, PassesRequestsOfTheMapItHas) {
  MetricsRegistry metrics;
  MapHold hold(&metrics);
  Message msg = Request(9, 3, 1);
  EXPECT_FALSE(hold.Hold(msg, 3, absl::Now(), 8));
  EXPECT_TRUE(hold.Release(3, absl::Now(), 8).empty());
}

TEST(MapHoldTest, HoldsARequestAheadAndTheSendersLaterOnesInOrder) {
  MetricsRegistry metrics;
  MapHold hold(&metrics);
  const absl::Time t = absl::Now();
  Message ahead = Request(9, 4, 1);
  Message behind = Request(9, 3, 2);  // same sender: waits behind it
  Message other = Request(11, 3, 3);  // another sender: not held
  ASSERT_TRUE(hold.Hold(ahead, 3, t, 8));
  ASSERT_TRUE(hold.Hold(behind, 3, t, 8));
  EXPECT_FALSE(hold.Hold(other, 3, t, 8));
  EXPECT_TRUE(hold.Release(3, t, 8).empty());
  EXPECT_THAT(Timestamps(hold.Release(4, t, 8)), ::testing::ElementsAre(1, 2));
  EXPECT_EQ(metrics.Value("petrel_server_requests_held_for_map_total", {})
                .value_or(0),
            2);
}

TEST(MapHoldTest, ReleasesWhatWaitedTooLongWithoutTheMap) {
  MetricsRegistry metrics;
  MapHold hold(&metrics);
  const absl::Time t = absl::Now();
  Message ahead = Request(9, 7, 1);
  ASSERT_TRUE(hold.Hold(ahead, 3, t, 8));
  EXPECT_TRUE(hold.Release(3, t + absl::Milliseconds(100), 8).empty());
  EXPECT_THAT(Timestamps(hold.Release(3, t + MapHold::kMaxMapHold, 8)),
              ::testing::ElementsAre(1));
}

TEST(MapHoldTest, AFullHoldLetsRequestsPass) {
  MetricsRegistry metrics;
  MapHold hold(&metrics);
  const absl::Time t = absl::Now();
  for (size_t i = 0; i < MapHold::kMaxHeld; ++i) {
    Message msg = Request(9, 5, static_cast<int>(i));
    ASSERT_TRUE(hold.Hold(msg, 3, t, 8));
  }
  Message one_more = Request(11, 5, -1);
  EXPECT_FALSE(hold.Hold(one_more, 3, t, 8));
}

}  // namespace
}  // namespace petrel
