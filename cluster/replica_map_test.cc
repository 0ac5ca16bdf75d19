#include "cluster/replica_map.h"

#include <algorithm>
#include <cstdlib>

#include "absl/strings/str_cat.h"
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

// Counts of ranges led and held by each rank.
std::vector<int64_t> Led(const ReplicaMap& m) {
  std::vector<int64_t> led(m.ranges().num_servers(), 0);
  for (int32_t o : m.ranges().owners()) ++led[o];
  return led;
}

TEST(ReplicaMapTest, AnAddedServerTakesItsFairShareAndOnlyItGetsRows) {
  for (int servers : {2, 3, 5}) {
    for (int replicas : {2, 3}) {
      if (replicas > servers) continue;
      SCOPED_TRACE(absl::StrCat(servers, " servers, R = ", replicas));
      ReplicaMap m = Make(servers, 16, replicas);
      const size_t ranges = m.ranges().owners().size();
      absl::StatusOr<ReplicaMap> next = m.WithServerAdded();
      ASSERT_TRUE(next.ok()) << next.status();
      const int added = servers;
      EXPECT_EQ(next->version(), m.version() + 1);
      EXPECT_EQ(next->ranges().num_servers(), servers + 1);
      EXPECT_EQ(next->live_servers(), servers + 1);
      EXPECT_EQ(next->under_replicated_ranges(), 0);
      // Its fair share: ranges / (n + 1) led, R * ranges / (n + 1) held.
      const std::vector<int64_t> led = Led(*next);
      EXPECT_EQ(led[added], static_cast<int64_t>(ranges / (servers + 1)));
      EXPECT_EQ(next->CopiesHeldBy(added),
                static_cast<int64_t>(ranges * replicas / (servers + 1)));
      // Every server within one range of the others, led and held.
      for (int r = 0; r <= servers; ++r) {
        EXPECT_LE(std::abs(led[r] - led[added]), 1) << "rank " << r;
        EXPECT_LE(std::abs(next->CopiesHeldBy(r) - next->CopiesHeldBy(added)),
                  1)
            << "rank " << r;
      }
      // Minimal movement: no old server holds a range it did not hold, a
      // range changes at most one replica, and a primary that moved stays
      // its range's first backup (it hands pushes off).
      for (size_t i = 0; i < ranges; ++i) {
        const std::vector<int> before = m.ChainOf(i);
        const std::vector<int> after = next->ChainOf(i);
        ASSERT_EQ(after.size(), static_cast<size_t>(replicas));
        int changed = 0;
        for (int r : after) {
          if (r == added) {
            ++changed;
            continue;
          }
          EXPECT_TRUE(m.ChainHolds(i, r)) << "range " << i << " rank " << r;
        }
        EXPECT_LE(changed, 1);
        if (next->ranges().owners()[i] == added) {
          EXPECT_EQ(after[1], before[0]);
        } else {
          EXPECT_EQ(next->ranges().owners()[i], m.ranges().owners()[i]);
        }
      }
      // It copies each range from a replica that holds it now.
      int64_t copied = 0;
      for (const auto& [source, list] : next->CopySourcesIn(added)) {
        for (int i : list) {
          EXPECT_TRUE(m.ChainHolds(i, source));
          EXPECT_EQ(m.ranges().owners()[i], source);
        }
        copied += static_cast<int64_t>(list.size());
      }
      EXPECT_EQ(copied, next->CopiesHeldBy(added));
      // A push sent by the old map to an old primary is handed off to the
      // new one.
      for (int r = 0; r < servers; ++r) {
        const std::vector<int> to =
            next->HandoffTargetsOf(r, m.ranges().owners());
        const bool moved = led[r] < Led(m)[r];
        EXPECT_EQ(std::count(to.begin(), to.end(), added), moved ? 1 : 0);
      }
      // The map survives the wire, chains and the grown ring included.
      pb::Control c;
      next->ToControl(&c);
      absl::StatusOr<ReplicaMap> read = ReplicaMap::FromControl(c, servers);
      ASSERT_TRUE(read.ok()) << read.status();
      for (size_t i = 0; i < ranges; ++i) {
        EXPECT_EQ(read->ChainOf(i), next->ChainOf(i));
      }
      EXPECT_EQ(read->ranges().owners(), next->ranges().owners());
      EXPECT_EQ(read->live_servers(), servers + 1);
      // Its death fails over to the old primaries.
      absl::StatusOr<ReplicaMap> failed = next->WithoutServer(added);
      ASSERT_TRUE(failed.ok()) << failed.status();
      for (size_t i = 0; i < ranges; ++i) {
        if (next->ranges().owners()[i] == added) {
          EXPECT_EQ(failed->ranges().owners()[i], m.ranges().owners()[i]);
        }
      }
    }
  }
}

TEST(ReplicaMapTest, AddingAServerNeedsReplicasAndNoDeadServer) {
  EXPECT_EQ(Make(2, 4, 1).WithServerAdded().status().code(),
            absl::StatusCode::kFailedPrecondition);
  absl::StatusOr<ReplicaMap> dead = Make(3, 4, 2).WithoutServer(1);
  ASSERT_TRUE(dead.ok());
  absl::Status s = dead->WithServerAdded().status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("server rank 1 is dead"), std::string::npos) << s;
}

TEST(ReplicaMapTest, ADrainedServersCopiesGoToTheLeastLoaded) {
  ReplicaMap m = Make(4, 8, 2);
  absl::StatusOr<ReplicaMap> next = m.WithServerDrained(1);
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ(next->version(), m.version() + 1);
  EXPECT_TRUE(next->dead(1));
  EXPECT_EQ(next->live_servers(), 3);
  EXPECT_EQ(next->under_replicated_ranges(), 0);
  EXPECT_EQ(next->CopiesHeldBy(1), 0);
  const std::vector<int64_t> led = Led(*next);
  EXPECT_EQ(led[1], 0);
  for (size_t i = 0; i < m.ranges().owners().size(); ++i) {
    if (m.ranges().owners()[i] == 1) {
      // Its next replica, which holds the rows, leads.
      EXPECT_EQ(next->ranges().owners()[i], m.ChainOf(i)[1]);
    } else {
      EXPECT_EQ(next->ranges().owners()[i], m.ranges().owners()[i]);
    }
    if (!m.ChainHolds(i, 1)) {
      EXPECT_EQ(next->ChainOf(i), m.ChainOf(i));
    }
  }
  for (int r : {0, 2, 3}) {
    EXPECT_NEAR(next->CopiesHeldBy(r), 64 / 3.0, 1.0) << "rank " << r;
  }
  // What each server copies comes from a replica that had it.
  int64_t copies = 0;
  for (int r : {0, 2, 3}) {
    for (const auto& [source, list] : next->NewCopiesOf(m, r)) {
      for (int i : list) {
        EXPECT_EQ(m.ranges().owners()[i], source);
        EXPECT_FALSE(m.ChainHolds(i, r));
        EXPECT_TRUE(next->ChainHolds(i, r));
      }
      copies += static_cast<int64_t>(list.size());
    }
  }
  EXPECT_EQ(copies, m.CopiesHeldBy(1));  // one new copy per copy it held
  // Refusals: not a live server; too few servers left.
  EXPECT_EQ(m.WithServerDrained(7).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(next->WithServerDrained(1).status().code(),
            absl::StatusCode::kInvalidArgument);
  absl::Status s = Make(2, 4, 2).WithServerDrained(0).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("would leave 1 live server(s) for 2 replicas"),
            std::string::npos)
      << s;
}

// A drained rank stays a dead slot in no chain: an add after the drain
// takes the next rank and the fair share of the live servers, and only it
// receives rows; a dead rank that still holds replicas (a failover) still
// waits for its replacement.
TEST(ReplicaMapTest, AServerAddedAfterADrainTakesTheLiveServersShare) {
  for (int replicas : {2, 3}) {
    SCOPED_TRACE(absl::StrCat("R = ", replicas));
    ReplicaMap m = Make(4, 8, replicas);
    const size_t ranges = m.ranges().owners().size();
    absl::StatusOr<ReplicaMap> drained = m.WithServerDrained(1);
    ASSERT_TRUE(drained.ok()) << drained.status();
    absl::StatusOr<ReplicaMap> next = drained->WithServerAdded();
    ASSERT_TRUE(next.ok()) << next.status();
    const int added = 4;
    EXPECT_EQ(next->version(), drained->version() + 1);
    EXPECT_EQ(next->ranges().num_servers(), 5);
    EXPECT_TRUE(next->dead(1));
    EXPECT_EQ(next->live_servers(), 4);
    EXPECT_EQ(next->under_replicated_ranges(), 0);
    EXPECT_EQ(next->CopiesHeldBy(1), 0);
    const std::vector<int64_t> led = Led(*next);
    EXPECT_EQ(led[added], static_cast<int64_t>(ranges / 4));
    EXPECT_EQ(next->CopiesHeldBy(added),
              static_cast<int64_t>(ranges * replicas / 4));
    for (int r : {0, 2, 3}) {
      EXPECT_LE(std::abs(led[r] - led[added]), 1) << "rank " << r;
      EXPECT_LE(std::abs(next->CopiesHeldBy(r) - next->CopiesHeldBy(added)), 1)
          << "rank " << r;
    }
    for (size_t i = 0; i < ranges; ++i) {
      for (int r : next->ChainOf(i)) {
        if (r != added) {
          EXPECT_TRUE(drained->ChainHolds(i, r)) << i;
        }
      }
    }
    int64_t copied = 0;
    for (const auto& [source, list] : next->CopySourcesIn(added)) {
      EXPECT_NE(source, 1);
      copied += static_cast<int64_t>(list.size());
    }
    EXPECT_EQ(copied, next->CopiesHeldBy(added));
    pb::Control c;
    next->ToControl(&c);
    absl::StatusOr<ReplicaMap> read = ReplicaMap::FromControl(c, 4);
    ASSERT_TRUE(read.ok()) << read.status();
    EXPECT_TRUE(read->dead(1));
    EXPECT_EQ(read->ranges().owners(), next->ranges().owners());
    // The added server can be drained in turn, and its death fails over.
    EXPECT_TRUE(next->WithServerDrained(added).ok());
    EXPECT_TRUE(next->WithoutServer(added).ok());
  }
  absl::StatusOr<ReplicaMap> drained = Make(4, 8, 2).WithServerDrained(1);
  ASSERT_TRUE(drained.ok()) << drained.status();
  absl::StatusOr<ReplicaMap> failed = drained->WithoutServer(2);
  ASSERT_TRUE(failed.ok()) << failed.status();
  absl::Status s = failed->WithServerAdded().status();
  EXPECT_NE(s.message().find("server rank 2 is dead"), std::string::npos) << s;
}

}  // namespace
}  // namespace petrel
