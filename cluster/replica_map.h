// ReplicaMap: which servers hold each key range when servers are
// replicated (docs/failures.md, "Replicated servers"). Every range has a
// home rank h (its owner in the initial map) and R replicas on the ranks
// h, h + 1, ..., h + R - 1 (mod the number of servers): its chain. The
// range's primary, which serves its pulls and orders its pushes, is the
// first live rank of its chain; the others are its backups. When a server
// dies the scheduler builds the next map with WithoutServer (each range the
// dead rank led goes to the next live rank of its chain), bumps the version
// and publishes it; every node rebuilds it with FromControl.
//
// An immutable value type; thread-compatible.
#ifndef PETREL_CLUSTER_REPLICA_MAP_H_
#define PETREL_CLUSTER_REPLICA_MAP_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

#include "cluster/key_range_map.h"
#include "proto/meta.pb.h"

namespace petrel {

class ReplicaMap {
 public:
  // The replication factor of a job of `num_servers` servers asked for
  // `requested` copies: requested (at most num_servers) when > 0; when 0
  // (not set), 2 with at least 2 servers, else 1 (docs/failures.md).
  static int Resolve(int requested, int num_servers) {
    if (requested > 0) return requested < num_servers ? requested : num_servers;
    return num_servers >= 2 ? 2 : 1;
  }

  // The first map of a job: `ranges`' owners are the homes and primaries,
  // version 1. InvalidArgument unless 1 <= replicas <= num_servers.
  static absl::StatusOr<ReplicaMap> Initial(KeyRangeMap ranges, int replicas);

  // The map after server rank `dead` died: every range it led goes to the
  // next live rank of the range's chain; version + 1. FailedPrecondition
  // naming a range when one has no live replica left (the job cannot go
  // on). `dead` already dead or out of range: InvalidArgument.
  absl::StatusOr<ReplicaMap> WithoutServer(int dead) const;

  // The map after a replacement for dead rank `rank` received a copy of
  // every range whose chain holds it (docs/failures.md, "Replacement
  // servers"): it is live again, as a backup of those ranges; primaries do
  // not change. Version + 1. InvalidArgument unless `rank` is dead.
  absl::StatusOr<ReplicaMap> WithServerBack(int rank) const;

  // Elastic servers (docs/failures.md, "Elastic servers";
  // replica_map_elastic.cc). The map with one more server, rank
  // num_servers(), holding its fair share: it leads about ranges/(n+1)
  // ranges and holds about R*ranges/(n+1) copies, each taken whole from the
  // server that leads (or backs) the most. A range it leads keeps its old
  // primary as its first backup (chain [new, old primary, ...]); a range it
  // backs keeps its primary. Each such range drops its last replica, so
  // only the new server receives rows. The share is of the live servers: a
  // drained rank (dead, in no chain) stays a dead slot of the ring. Version
  // + 1. FailedPrecondition when the job is not replicated or a dead server
  // still holds replicas (it waits for its replacement).
  absl::StatusOr<ReplicaMap> WithServerAdded() const;
  // The map without live server `rank` (a drain): in each chain that holds
  // it, it is removed (the next replica leads the ranges it led) and the
  // live server outside the chain holding the fewest copies is appended.
  // Version + 1; `rank` counts as dead. FailedPrecondition when fewer than
  // replicas() live servers would remain or a range would lose its last
  // live copy; InvalidArgument when `rank` is not a live server.
  absl::StatusOr<ReplicaMap> WithServerDrained(int rank) const;
  // What `rank` must be copied before this map (in which it holds the
  // ranges listed) is published: for each range whose chain holds it, the
  // first live replica of the chain other than it (the primary it copies
  // from). Ascending by source.
  std::vector<std::pair<int, std::vector<int>>> CopySourcesIn(int rank) const;
  // What `rank` must be copied before this map replaces `before` (a
  // drain): the ranges it holds here and not there, each from its primary
  // in `before`. Ascending by source.
  std::vector<std::pair<int, std::vector<int>>> NewCopiesOf(
      const ReplicaMap& before, int rank) const;
  // Where a server that led ranges in `previous` forwards a push that
  // arrives after this map moved them (a request sent by the old map): the
  // live replicas other than `rank` of the ranges it led there and no
  // longer leads. Ascending.
  std::vector<int> HandoffTargetsOf(int rank,
                                    const std::vector<int32_t>& previous) const;
  // Replicas of range i in chain order (replicas() of them).
  std::vector<int> ChainOf(size_t i) const;
  // How many ranges' chains hold `rank`.
  int64_t CopiesHeldBy(int rank) const;

  // What a replacement for dead rank `newcomer` must be copied: for each
  // live primary, the ranges it leads whose chain holds `newcomer`.
  // Ascending by primary; each list ascending.
  std::vector<std::pair<int, std::vector<int>>> CopySources(int newcomer) const;
  // Whether range i's chain holds `rank`.
  bool ChainHolds(size_t i, int rank) const;

  // The rank that takes over the ranges `dead` led (the next live rank
  // after it in the ring), or -1 when `dead` is alive in this map or no
  // rank is.
  int SuccessorOf(int dead) const;

  // Live ranks other than `primary` that hold a replica of a range
  // `primary` leads: where its pushes are forwarded. Ascending.
  std::vector<int> BackupsOf(int primary) const;

  // The ranges `rank` holds a live replica of (primary or backup), as a
  // map whose owner is `rank` for those and the primary for the others:
  // what a server loads from a checkpoint, so that its backups hold the
  // rows too. With one replica, ranges().
  KeyRangeMap HeldBy(int rank) const;

  // Writes replicas, ranges, range_owners (primaries), range_homes,
  // map_version and live_servers into `control`, and range_replicas and
  // num_servers when the chains are explicit.
  void ToControl(pb::Control* control) const;
  // Rebuilds a map from a control message. A message without replication
  // fields (replicas 0) gives a map of one replica, version 0.
  // InvalidArgument naming the reason when the fields disagree.
  static absl::StatusOr<ReplicaMap> FromControl(const pb::Control& control,
                                                int num_servers);

  // Routing: the primaries.
  const KeyRangeMap& ranges() const { return ranges_; }
  const std::vector<int32_t>& homes() const { return homes_; }
  int replicas() const { return replicas_; }
  uint64_t version() const { return version_; }
  bool dead(int rank) const;
  // Whether `rank` was drained: dead and in no range's chain (a dead server
  // waiting for its replacement is still in its ranges' chains).
  bool drained(int rank) const { return dead(rank) && CopiesHeldBy(rank) == 0; }
  // Live servers, and how many ranges have fewer than replicas() live
  // copies.
  int live_servers() const;
  int64_t under_replicated_ranges() const;

 private:
  ReplicaMap(KeyRangeMap ranges, std::vector<int32_t> homes, int replicas,
             uint64_t version, std::vector<bool> dead);
  // With explicit chains (`chains`: replicas per range, in order).
  ReplicaMap(KeyRangeMap ranges, std::vector<int32_t> chains, int replicas,
             uint64_t version, std::vector<bool> dead, bool explicit_chains);
  // Rebuilds ranges_ with each range's first live replica as its owner.
  absl::StatusOr<ReplicaMap> WithChains(std::vector<int32_t> chains,
                                        int num_servers,
                                        std::vector<bool> dead) const;
  const int32_t* chain(size_t i) const { return &chains_[i * replicas_]; }

  KeyRangeMap ranges_;
  std::vector<int32_t> homes_;  // each chain's first replica
  // replicas_ ranks per range, in chain order: homes_[i], homes_[i] + 1,
  // ... mod the servers unless explicit_ (after an add or a drain).
  std::vector<int32_t> chains_;
  bool explicit_ = false;
  int replicas_;
  uint64_t version_;
  std::vector<bool> dead_;  // per server rank
};

}  // namespace petrel

#endif  // PETREL_CLUSTER_REPLICA_MAP_H_
