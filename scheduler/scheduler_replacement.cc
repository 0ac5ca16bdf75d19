// The scheduler's side of replacement servers (docs/failures.md,
// "Replacement servers"): a server that joins a formed, replicated job takes
// a dead server's id and rank, copies the ranges of that rank from their
// live primaries while the job goes on, and, once it reports that it holds
// them, the scheduler publishes the map with it as a replica again.
#include "absl/strings/str_cat.h"
#include "glog/logging.h"

#include "scheduler/scheduler.h"

namespace petrel {

absl::StatusOr<int> Scheduler::ReplacementRank(const pb::Node& node) const {
  if (node.role() != pb::ROLE_SERVER) {
    return absl::FailedPreconditionError(
        "the cluster is already complete (only a server may join a running "
        "job, to replace a dead one)");
  }
  if (!replica_map_.has_value() || replica_map_->replicas() < 2) {
    return absl::FailedPreconditionError(
        "the cluster is already complete and its servers are not replicated "
        "(--replicas=1): a replacement server has nothing to copy from");
  }
  if (node.add_server()) return AddedServerRank();
  const int n = postoffice_->num_servers();
  auto free = [&](int r) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    return replica_map_->dead(r) && !replacing_.contains(ServerRankToId(r)) &&
           !drained_.contains(ServerRankToId(r));
  };
  if (node.requested_rank() >= 0) {
    if (node.requested_rank() < n && free(node.requested_rank())) {
      return node.requested_rank();
    }
    return absl::FailedPreconditionError(
        absl::StrCat("server rank ", node.requested_rank(),
                     " is not a dead server waiting for a replacement"));
  }
  for (int r = 0; r < n; ++r) {
    if (free(r)) return r;
  }
  return absl::FailedPreconditionError(
      "the cluster is already complete: no dead server to replace "
      "(petrel-server --add_server adds one more server)");
}

void Scheduler::AdmitReplacement(pb::Node node, int rank) {
  if (node.add_server()) {
    AdmitAddedServer(std::move(node), rank);
    return;
  }
  const int id = ServerRankToId(rank);
  node.set_rank(rank);
  node.set_id(id);
  for (pb::Node& n : table_) {
    if (n.id() == id) n = node;
  }
  for (auto it = dead_.begin(); it != dead_.end(); ++it) {
    if (it->node.id() == id) {
      dead_.erase(it);
      break;
    }
  }
  replacing_[id] = {rank, absl::Now(), {}};
  NoteMapForReplacements();
  last_seen_[id] = absl::Now();
  postoffice_->van()->AdmitIdentity(node.transport_id());
  postoffice_->van()->Connect(node);
  LOG(WARNING) << "server from " << node.host() << ":" << node.port()
               << " replaces server " << rank << " (node " << id
               << "); it copies its key ranges while the job goes on";
  // The others first, so that its copy requests find them knowing it.
  pb::Control back;
  back.set_cmd(pb::COMMAND_NODE_BACK);
  *back.add_nodes() = node;
  SendToLiveNodes(back, id);
  pb::Control reply;
  reply.set_cmd(pb::COMMAND_ADD_NODE);
  for (const pb::Node& n : table_) *reply.add_nodes() = n;
  replica_map_->ToControl(&reply);
  SendControl(id, std::move(reply));
}

void Scheduler::NoteMapForReplacements() {
  for (auto& [id, r] : replacing_) {
    r.sources[replica_map_->version()] = replica_map_->CopySources(r.rank);
  }
}

void Scheduler::AnswerCaughtUp(int sender, const std::string& refused) {
  pb::Control answer;
  answer.set_cmd(pb::COMMAND_CAUGHT_UP);
  answer.set_reason(refused);
  answer.set_map_version(replica_map_.has_value() ? replica_map_->version()
                                                  : 0);
  SendControl(sender, std::move(answer));
}

void Scheduler::HandleCaughtUp(int sender, uint64_t version) {
  if (adding_.has_value() && adding_->id == sender) {
    HandleAddedCaughtUp();
    return;
  }
  auto it = replacing_.find(sender);
  if (it == replacing_.end() || !replica_map_.has_value()) {
    LOG_EVERY_T(WARNING, 1.0) << "ignoring CAUGHT_UP from node " << sender;
    AnswerCaughtUp(sender, "it is not a server copying key ranges");
    return;
  }
  const int rank = it->second.rank;
  // Copies made against an older map hold what its sources had; a source
  // that died since no longer forwards, and its successor does not know
  // the replacement as a copy target.
  auto then = it->second.sources.find(version);
  if (then == it->second.sources.end() ||
      then->second != replica_map_->CopySources(rank)) {
    const std::string reason = absl::StrCat(
        "its copies were made against key-range map version ", version,
        then == it->second.sources.end() ? ", not one published while it copied"
                                         : ", and a source of them died since",
        " (the map is at version ", replica_map_->version(), ")");
    LOG(WARNING) << "refusing the CAUGHT_UP of replacement " << Describe(sender)
                 << ": " << reason;
    postoffice_->metrics()
        ->GetCounter("petrel_scheduler_stale_catch_ups_total",
                     "CAUGHT_UPs refused because a copy source of the "
                     "server died after the map they were made against.")
        ->Increment();
    AnswerCaughtUp(sender, reason);
    return;
  }
  const absl::Duration took = absl::Now() - it->second.since;
  replacing_.erase(it);
  absl::StatusOr<ReplicaMap> next = replica_map_->WithServerBack(rank);
  if (!next.ok()) {
    LOG(ERROR) << "replacement " << Describe(sender) << ": " << next.status();
    AnswerCaughtUp(sender, std::string(next.status().message()));
    return;
  }
  replica_map_ = *std::move(next);
  NoteMapForReplacements();
  lost_servers_.erase(sender);
  const int64_t under = replica_map_->under_replicated_ranges();
  MetricsRegistry* metrics = postoffice_->metrics();
  SetMapVersionGauge();
  metrics
      ->GetGauge("petrel_scheduler_under_replicated_ranges",
                 "Key ranges with fewer live copies than the job's "
                 "replication factor.")
      ->Set(static_cast<double>(under));
  metrics
      ->GetCounter("petrel_scheduler_replacements_total",
                   "Replacement servers that copied a dead server's ranges "
                   "and became replicas.")
      ->Increment();
  LOG(WARNING) << Describe(sender) << " caught up after "
               << absl::FormatDuration(took)
               << " and is a replica again; key-range map version "
               << replica_map_->version() << "; " << under << " of "
               << replica_map_->ranges().owners().size()
               << " ranges have fewer than " << replica_map_->replicas()
               << " live copies (" << replica_map_->live_servers()
               << " live servers)";
  SendToLiveNodes(NodeBackWithMap(sender), -1);
  AnswerCaughtUp(sender, "");
}

}  // namespace petrel
