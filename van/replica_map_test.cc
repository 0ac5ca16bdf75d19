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

TEST(ReplicaMapTest, AReplacementComesBackAsABackup) {
  ReplicaMap m = Make(3, 4, 2);
  EXPECT_FALSE(m.WithServerBack(0).ok());  // alive
  ReplicaMap failed = m.WithoutServer(0).value();
  // Rank 0 is in the chains of its own ranges (led by 1 now) and rank 2's.
  const auto sources = failed.CopySources(0);
  ASSERT_EQ(sources.size(), 2u);
  EXPECT_EQ(sources[0].first, 1);
  EXPECT_EQ(sources[1].first, 2);
  for (const auto& [primary, ranges] : sources) {
    for (int i : ranges) {
      EXPECT_EQ(failed.ranges().owners()[i], primary);
      EXPECT_TRUE(failed.ChainHolds(i, 0));
    }
    EXPECT_EQ(ranges.size(), 4u);
  }
  absl::StatusOr<ReplicaMap> back = failed.WithServerBack(0);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->version(), 3u);
  EXPECT_EQ(back->under_replicated_ranges(), 0);
  EXPECT_EQ(back->live_servers(), 3);
  // Primaries stay; rank 0 is a backup of rank 1's and rank 2's ranges.
  EXPECT_EQ(back->ranges().owners(), failed.ranges().owners());
  EXPECT_EQ(back->BackupsOf(1), std::vector<int>({0, 2}));
  EXPECT_EQ(back->BackupsOf(2), std::vector<int>({0}));
  // It survives the round trip (rank 0 skipped before primaries, yet live).
  pb::Control c;
  back->ToControl(&c);
  absl::StatusOr<ReplicaMap> read = ReplicaMap::FromControl(c, 3);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_FALSE(read->dead(0));
  EXPECT_EQ(read->under_replicated_ranges(), 0);
  // A listed primary that is not live is refused.
  c.clear_live_servers();
  c.add_live_servers(0);
  EXPECT_FALSE(ReplicaMap::FromControl(c, 3).ok());
  // Then rank 1 dies: rank 0 leads its own ranges again (its copy).
  ReplicaMap again = back->WithoutServer(1).value();
  for (size_t i = 0; i < again.ranges().owners().size(); ++i) {
    const int home = again.homes()[i];
    EXPECT_EQ(again.ranges().owners()[i], home == 1 ? 2 : home);
  }
}

}  // namespace
}  // namespace petrel
