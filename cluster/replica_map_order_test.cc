// Whether a map change sent to every node at once can lose a push
// (docs/failures.md, "The order in which nodes learn a map"): a worker may
// route by the new map while the server it sends a push to still routes by
// the old one. That server forwards the push to its backups in the old map
// and to the servers copying from it, and acknowledges it once they applied
// it. A live replica of the range in the new map that is none of them
// misses an acknowledged push. These tests check, for each map change the
// scheduler still sends to every node at once (failover, a replacement's
// catch-up, an added server), that no such replica exists.
#include <algorithm>
#include <cstdio>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

#include "cluster/replica_map.h"

namespace petrel {

namespace {

ReplicaMap Make(int servers, int vnodes, int replicas) {
  return ReplicaMap::Initial(KeyRangeMap::Uniform(servers, vnodes).value(),
                             replicas)
      .value();
}

// The ranks a push for range i reaches when a worker routes it by `next`
// and its new primary routes by `old`: the primary, its backups in `old`
// and `copying` (servers it forwards to as copy targets).
std::set<int> Reached(const ReplicaMap& old, const ReplicaMap& next, size_t i,
                      const std::set<int>& copying) {
  const int primary = next.ranges().owners()[i];
  std::set<int> out = {primary};
  for (int r : old.BackupsOf(primary)) out.insert(r);
  out.insert(copying.begin(), copying.end());
  return out;
}

// The live replicas of range i in `next` that a push sent by `next` to
// its primary, still on `old`, misses.
std::vector<int> Missed(const ReplicaMap& old, const ReplicaMap& next, size_t i,
                        const std::set<int>& copying = {}) {
  const std::set<int> reached = Reached(old, next, i, copying);
  std::vector<int> out;
  for (int r : next.ChainOf(i)) {
    if (!next.dead(r) && reached.count(r) == 0) out.push_back(r);
  }
  return out;
}

// The map of a job of `servers` servers and `replicas` copies after a
// change: 0 none (the ring), 1 an add, 2 a drain of rank 0 (dead there),
// 3 rank 0's failover and its replacement's catch-up. An error when the
// change is refused for that job.
absl::StatusOr<ReplicaMap> After(int change, int servers, int replicas) {
  const ReplicaMap first = Make(servers, 8, replicas);
  switch (change) {
    case 1:
      return first.WithServerAdded();
    case 2:
      return first.WithServerDrained(0);
    case 3: {
      absl::StatusOr<ReplicaMap> failed = first.WithoutServer(0);
      if (!failed.ok()) return failed.status();
      return failed->WithServerBack(0);
    }
    default:
      return first;
  }
}

// Every map such a job may route by with every server live but a drained one.
std::vector<ReplicaMap> Maps(int servers, int replicas) {
  std::vector<ReplicaMap> out;
  for (int change = 0; change <= 3; ++change) {
    absl::StatusOr<ReplicaMap> m = After(change, servers, replicas);
    if (m.ok()) out.push_back(*std::move(m));
  }
  return out;
}

// With 2 copies the surviving replica is a range's only live one: the push
// it applies, on whichever map, is on every live replica.
TEST(MapOrderTest, AFailoverWithTwoReplicasMissesNoReplica) {
  for (int servers : {2, 3, 4, 5}) {
    for (const ReplicaMap& old : Maps(servers, 2)) {
      for (int dead = 0; dead < old.ranges().num_servers(); ++dead) {
        if (old.dead(dead)) continue;
        absl::StatusOr<ReplicaMap> next = old.WithoutServer(dead);
        if (!next.ok()) continue;  // a range would lose every copy
        for (size_t i = 0; i < old.ranges().owners().size(); ++i) {
          EXPECT_EQ(Missed(old, *next, i), std::vector<int>())
              << servers << " servers, map version " << old.version()
              << ", rank " << dead << " dies, range " << i;
        }
      }
    }
  }
}

// With 3 copies on the ring (chains h, h + 1, h + 2) the successor's own
// ranges are backed by the rest of the dead server's chain.
TEST(MapOrderTest, AFailoverWithThreeReplicasOnTheRingMissesNoReplica) {
  for (int servers : {3, 4, 5, 6}) {
    ReplicaMap old = Make(servers, 8, 3);
    for (int dead = 0; dead < servers; ++dead) {
      ReplicaMap next = old.WithoutServer(dead).value();
      for (size_t i = 0; i < old.ranges().owners().size(); ++i) {
        EXPECT_EQ(Missed(old, next, i), std::vector<int>())
            << servers << " servers, rank " << dead << " dies, range " << i;
      }
      // And a second death, from the map after the first.
      for (int second = 0; second < servers; ++second) {
        absl::StatusOr<ReplicaMap> after = next.WithoutServer(second);
        if (!after.ok()) continue;
        for (size_t i = 0; i < old.ranges().owners().size(); ++i) {
          EXPECT_EQ(Missed(next, *after, i), std::vector<int>())
              << servers << " servers, ranks " << dead << " and " << second
              << " die, range " << i;
        }
      }
    }
  }
}

// With 3 copies after a replacement or a drain the chains or primaries are no
// longer the ring's (a replacement leads nothing, a drain appends a server to
// chains): the successor's backups on the old map need not hold the rest of
// the dead server's chain, and a failover may lose an acknowledged push when
// a worker routes by the new map first (docs/failures.md, "The order in which
// nodes learn a map"). The test pins the maps' property that limit rests on.
TEST(MapOrderTest,
     AFailoverWithThreeReplicasAfterAReplacementOrADrainCanMissOne) {
  const char* kinds[] = {"", "an add", "a drain", "a replacement"};
  for (int kind = 1; kind <= 3; ++kind) {
    int missing = 0;
    for (int servers : {3, 4, 5, 6}) {
      absl::StatusOr<ReplicaMap> after = After(kind, servers, 3);
      if (!after.ok()) continue;
      const ReplicaMap& old = *after;
      for (int dead = 0; dead < old.ranges().num_servers(); ++dead) {
        if (old.dead(dead)) continue;
        absl::StatusOr<ReplicaMap> next = old.WithoutServer(dead);
        if (!next.ok()) continue;
        for (size_t i = 0; i < old.ranges().owners().size(); ++i) {
          const std::vector<int> missed = Missed(old, *next, i);
          if (!missed.empty() && missing++ == 0) {
            std::printf(
                "after %s, %d servers: rank %d dies; range %d's new primary "
                "%d, on the old map, forwards to none of rank %d\n",
                kinds[kind], servers, dead, static_cast<int>(i),
                next->ranges().owners()[i], missed[0]);
          }
        }
      }
    }
    std::printf("after %s: %d (range, death) cases miss a replica\n",
                kinds[kind], missing);
    // None after an add among these jobs: the failover of an added server
    // makes the old primary, whose own chains are the ring's, lead again.
    if (kind == 1) {
      EXPECT_EQ(missing, 0);
    } else {
      EXPECT_GT(missing, 0) << kinds[kind];
    }
  }
}

// A replacement's catch-up keeps every primary; the replacement is the
// only new live replica, and each primary forwards to it on the old map
// (a copy target) as on the new one (a backup).
TEST(MapOrderTest, AReplacementsCatchUpMissesNoReplica) {
  for (int servers : {2, 3, 4, 5}) {
    for (int replicas : {2, 3}) {
      if (replicas > servers) continue;
      const ReplicaMap first = Make(servers, 8, replicas);
      for (int dead = 0; dead < servers; ++dead) {
        ReplicaMap failed = first.WithoutServer(dead).value();
        ReplicaMap back = failed.WithServerBack(dead).value();
        EXPECT_EQ(back.ranges().owners(), failed.ranges().owners());
        std::set<int> sources;
        for (const auto& [source, ranges] : failed.CopySources(dead)) {
          sources.insert(source);
        }
        for (size_t i = 0; i < first.ranges().owners().size(); ++i) {
          const int primary = back.ranges().owners()[i];
          std::set<int> copying;
          if (sources.count(primary) > 0) copying.insert(dead);
          EXPECT_EQ(Missed(failed, back, i, copying), std::vector<int>())
              << servers << " servers, R = " << replicas << ", rank " << dead
              << " replaced, range " << i;
        }
      }
    }
  }
}

// An added server routes by the map with its share from the moment it
// joins (the scheduler's ADD_NODE carries it), so pushes for the ranges it
// leads reach its new chain; the others keep their primaries, which forward
// to it as a copy target on the old map and as a backup on the new one.
TEST(MapOrderTest, AnAddMissesNoReplica) {
  for (int servers : {2, 3, 4, 5}) {
    for (int replicas : {2, 3}) {
      if (replicas > servers) continue;
      const ReplicaMap old = Make(servers, 8, replicas);
      const ReplicaMap next = old.WithServerAdded().value();
      const int added = servers;
      std::set<int> sources;
      for (const auto& [source, ranges] : next.CopySourcesIn(added)) {
        sources.insert(source);
      }
      for (size_t i = 0; i < old.ranges().owners().size(); ++i) {
        const int primary = next.ranges().owners()[i];
        if (primary == added) {
          const std::vector<int> backups = next.BackupsOf(added);
          for (int r : next.ChainOf(i)) {
            if (r == added) continue;
            EXPECT_NE(std::find(backups.begin(), backups.end(), r),
                      backups.end())
                << "range " << i;
          }
          continue;
        }
        EXPECT_EQ(primary, old.ranges().owners()[i]);
        std::set<int> copying;
        if (sources.count(primary) > 0) copying.insert(added);
        EXPECT_EQ(Missed(old, next, i, copying), std::vector<int>())
            << servers << " servers, R = " << replicas << ", range " << i;
      }
    }
  }
}

// Not the map's order but the same loss: a worker that moved every
// unanswered push of a dead server, whole, to SuccessorOf (the next live
// rank of the ring) lost pushes when the dead server was an added one: that
// rank (0) neither holds the ranges it led (chain [added, old primary]) nor
// backs their new primary, so a push the added server took but had not
// forwarded yet was applied and acknowledged by a server that is no replica
// of its range. So a moved push is cut by the new map (KVWorker::SplitMoved)
// and each piece goes to its ranges' new primary, which applies it and
// forwards it to its backups: that reaches every live replica of each
// range's new chain, for any rank's death (docs/failures.md, "Replicated
// servers"). The successor's shortfall is checked too, as the reason.
TEST(MapOrderTest, AMovedPushReachesEachRangesNewChainNotOnlyTheSuccessors) {
  for (int servers : {3, 4, 5}) {
    for (int replicas : {2, 3}) {
      if (replicas >= servers) continue;
      const ReplicaMap added =
          Make(servers, 8, replicas).WithServerAdded().value();
      for (int dead = 0; dead <= servers; ++dead) {
        const ReplicaMap next = added.WithoutServer(dead).value();
        const int successor = next.SuccessorOf(dead);
        const std::vector<int> by_successor = next.BackupsOf(successor);
        int missed_by_successor = 0;
        for (size_t i = 0; i < added.ranges().owners().size(); ++i) {
          if (added.ranges().owners()[i] != dead) continue;
          // The piece of range i goes to its new primary.
          const int primary = next.ranges().owners()[i];
          const std::vector<int> backups = next.BackupsOf(primary);
          for (int r : next.ChainOf(i)) {
            if (next.dead(r)) continue;
            if (r != primary) {
              EXPECT_NE(std::find(backups.begin(), backups.end(), r),
                        backups.end())
                  << servers << " servers, R = " << replicas << ", rank "
                  << dead << " dies, range " << i << ", replica " << r;
            }
            if (r != successor) {
              missed_by_successor +=
                  std::find(by_successor.begin(), by_successor.end(), r) ==
                  by_successor.end();
            }
          }
        }
        if (dead == servers && replicas == 2) {
          SCOPED_TRACE(absl::StrCat(servers, " servers, the added one dies"));
          EXPECT_GT(missed_by_successor, 0);
        }
      }
    }
  }
}
}  // namespace
}  // namespace petrel
