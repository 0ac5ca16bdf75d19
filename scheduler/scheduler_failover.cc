// The scheduler's side of replicated servers (docs/failures.md,
// "Replicated servers"): on a server's death, promote a replica for each
// range it led and publish the next key-range map with the NODE_DEAD
// notice, instead of failing the job.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

#include "scheduler/scheduler.h"

namespace petrel {

int Scheduler::ResolvedReplicas() const {
  return ReplicaMap::Resolve(options_.replicas, postoffice_->num_servers());
}

bool Scheduler::FailOverServer(const pb::Node& node, pb::Control* notice) {
  if (!replica_map_.has_value() || replica_map_->replicas() < 2) return false;
  absl::StatusOr<ReplicaMap> next = replica_map_->WithoutServer(node.rank());
  if (!next.ok()) {
    LOG(ERROR) << "cannot fail over " << Describe(node.id()) << ": "
               << next.status().message();
    return false;
  }
  const int successor = next->SuccessorOf(node.rank());
  if (successor < 0) return false;
  replica_map_ = *std::move(next);
  NoteMapForReplacements();
  lost_servers_.insert(node.id());
  replica_map_->ToControl(notice);
  notice->set_successor(ServerRankToId(successor));
  MetricsRegistry* metrics = postoffice_->metrics();
  metrics
      ->GetCounter("petrel_scheduler_failovers_total",
                   "Servers declared dead whose key ranges a replica took "
                   "over (the job went on).")
      ->Increment();
  SetMapVersionGauge();
  const int64_t under = replica_map_->under_replicated_ranges();
  metrics
      ->GetGauge("petrel_scheduler_under_replicated_ranges",
                 "Key ranges with fewer live copies than the job's "
                 "replication factor.")
      ->Set(static_cast<double>(under));
  LOG(WARNING) << Describe(node.id()) << ": its key ranges fail over to "
               << Describe(ServerRankToId(successor))
               << "; key-range map version " << replica_map_->version()
               << "; running with fewer replicas: " << under << " of "
               << replica_map_->ranges().owners().size() << " ranges have < "
               << replica_map_->replicas() << " live copies ("
               << replica_map_->live_servers() << " live servers)";
  // Barriers of the server group no longer wait for it.
  for (int group = 1; group <= kAllGroup; ++group) {
    if (group & kServerGroup) PassBarriers(group);
  }
  return true;
}

}  // namespace petrel
