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
#ifndef PETREL_VAN_REPLICA_MAP_H_
#define PETREL_VAN_REPLICA_MAP_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

#include "proto/meta.pb.h"
#include "van/key_range_map.h"

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

  // What a replacement for dead rank `newcomer` must be copied: for each
  // live primary, the ranges it leads whose chain holds `newcomer`.
  // Ascending by primary; each list ascending.
  std::vector<std::pair<int, std::vector<int>>> CopySources(int newcomer) const;
  // Whether range i's chain holds `rank`.
  bool ChainHolds(size_t i, int rank) const;

  // The rank that took over the ranges `dead` led in this map (the next
  // live rank after it in the ring), or -1 when it led none or is alive.
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
  // map_version and live_servers into `control`.
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
  // Live servers, and how many ranges have fewer than replicas() live
  // copies.
  int live_servers() const;
  int64_t under_replicated_ranges() const;

 private:
  ReplicaMap(KeyRangeMap ranges, std::vector<int32_t> homes, int replicas,
             uint64_t version, std::vector<bool> dead);

  KeyRangeMap ranges_;
  std::vector<int32_t> homes_;
  int replicas_;
  uint64_t version_;
  std::vector<bool> dead_;  // per server rank
};

}  // namespace petrel

#endif  // PETREL_VAN_REPLICA_MAP_H_
