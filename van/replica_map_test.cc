#include "van/replica_map.h"

#include "gtest/gtest.h"

namespace petrel {
namespace {

ReplicaMap Make(int servers, int vnodes, int replicas) {
  return ReplicaMap::Initial(KeyRangeMap::Uniform(servers, vnodes).value(),
                             replicas)
      .value();
}

TEST(ReplicaMapTest, InitialChainsFollowTheRing) {
  ReplicaMap m = Make(3, 2, 2);
  EXPECT_EQ(m.version(), 1u);
  EXPECT_EQ(m.BackupsOf(0), std::vector<int>({1}));
  EXPECT_EQ(m.BackupsOf(2), std::vector<int>({0}));
  EXPECT_EQ(m.under_replicated_ranges(), 0);
  EXPECT_FALSE(ReplicaMap::Initial(KeyRangeMap::Uniform(2, 1).value(), 3).ok());
}

TEST(ReplicaMapTest, DeadServersRangesGoToTheNextLiveReplica) {
  ReplicaMap m = Make(3, 4, 2);
  absl::StatusOr<ReplicaMap> next = m.WithoutServer(1);
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ(next->version(), 2u);
  EXPECT_EQ(next->SuccessorOf(1), 2);
  for (size_t i = 0; i < m.ranges().owners().size(); ++i) {
    const int was = m.ranges().owners()[i];
    EXPECT_EQ(next->ranges().owners()[i], was == 1 ? 2 : was);
  }
  // Rank 2 leads its own ranges (backed by 0) and rank 1's (no live copy).
  EXPECT_EQ(next->BackupsOf(2), std::vector<int>({0}));
  EXPECT_EQ(next->BackupsOf(0), std::vector<int>());
  EXPECT_GT(next->under_replicated_ranges(), 0);
  // Rank 2 now holds rank 1's ranges alone: its death loses them.
  absl::StatusOr<ReplicaMap> worse = next->WithoutServer(2);
  EXPECT_EQ(worse.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_FALSE(next->WithoutServer(1).ok());  // already dead
}

TEST(ReplicaMapTest, ThreeReplicasSurviveTwoDeaths) {
  ReplicaMap m = Make(4, 3, 3);
  absl::StatusOr<ReplicaMap> a = m.WithoutServer(1);
  ASSERT_TRUE(a.ok());
  absl::StatusOr<ReplicaMap> b = a->WithoutServer(2);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->SuccessorOf(2), 3);
  EXPECT_EQ(b->live_servers(), 2);
}

TEST(ReplicaMapTest, RoundTripsThroughControl) {
  ReplicaMap m = Make(3, 4, 2).WithoutServer(0).value();
  pb::Control c;
  m.ToControl(&c);
  absl::StatusOr<ReplicaMap> back = ReplicaMap::FromControl(c, 3);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->version(), m.version());
  EXPECT_EQ(back->ranges().owners(), m.ranges().owners());
  EXPECT_EQ(back->homes(), m.homes());
  EXPECT_TRUE(back->dead(0));
  EXPECT_FALSE(back->dead(1));
  EXPECT_EQ(back->BackupsOf(1), m.BackupsOf(1));
  // A primary outside its range's chain is refused.
  c.set_range_owners(0, 2);
  c.set_range_homes(0, 0);
  EXPECT_FALSE(ReplicaMap::FromControl(c, 3).ok());
  // Unreplicated: one copy, version 0.
  pb::Control plain;
  KeyRangeMap u = KeyRangeMap::Uniform(2, 2).value();
  for (uint64_t b : u.begins()) plain.add_ranges(b);
  for (int32_t o : u.owners()) plain.add_range_owners(o);
  absl::StatusOr<ReplicaMap> one = ReplicaMap::FromControl(plain, 2);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->replicas(), 1);
  EXPECT_EQ(one->version(), 0u);
}

}  // namespace
}  // namespace petrel
