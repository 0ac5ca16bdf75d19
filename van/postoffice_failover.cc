// Postoffice: a server's failover (docs/failures.md, "Replicated servers").
// Kept apart from postoffice.cc: the scheduler's NODE_DEAD of a replicated
// server carries the next key-range map, which replaces this node's.
#include <cstdint>
#include <utility>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

#include "van/postoffice.h"

namespace petrel {

bool Postoffice::InstallFailoverMap(int dead, const pb::Control& control) {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<ReplicaMap> map =
      ReplicaMap::FromControl(control, num_servers_);
  if (!map.ok() || map->replicas() < 2 || !IsServerId(control.successor())) {
    LOG(ERROR) << "node " << dead << " failed over, but the new key-range map "
               << "is unusable: "
               << (map.ok() ? "not replicated" : map.status().ToString());
    return false;
  }
  if (map->version() <= map_version_.load(std::memory_order_acquire)) {
    return true;  // an older or repeated map: the requests moved already
  }
  LOG(WARNING) << "node " << my_id() << ": key-range map version "
               << map->version() << ": node " << dead
               << "'s ranges are now served by node " << control.successor()
               << " (" << map->live_servers() << " live servers, "
               << map->under_replicated_ranges() << " range(s) with fewer than "
               << map->replicas() << " replicas)";
  SetReplicaMap(*std::move(map));
  return true;
}

void Postoffice::SetReplicaMap(ReplicaMap map) {
  const uint64_t version = map.version();
  ranges_ = map.ranges();
  map_version_.store(version, std::memory_order_release);
  replica_map_ = std::move(map);
  metrics_
      ->GetGauge("petrel_key_range_map_version",
                 "Version of the key-range map this node routes by (bumped "
                 "by each change: a failover, a replacement, an added or a "
                 "drained server).")
      ->Set(static_cast<double>(version));
}

}  // namespace petrel
