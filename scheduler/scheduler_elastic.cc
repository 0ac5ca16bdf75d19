// The scheduler's side of elastic servers (docs/failures.md, "Elastic
// servers"): a server that asks to be added to a running replicated job
// (petrel-server --add_server) becomes the next server rank; the scheduler
// computes the map in which it holds its fair share of whole key ranges
// (ReplicaMap::WithServerAdded) and sends it that map; the server copies
// its ranges from their current primaries while the job goes on, and once
// it reports that it holds them the scheduler publishes the map.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

#include "scheduler/scheduler.h"

namespace petrel {

absl::StatusOr<int> Scheduler::AddedServerRank() const {
  if (adding_.has_value()) {
    return absl::FailedPreconditionError(
        absl::StrCat("server ", (adding_->id - ServerRankToId(0)) / 2,
                     " is being added; add one server at a time"));
  }
  if (!replacing_.empty()) {
    return absl::FailedPreconditionError(
        "a replacement server is still copying its key ranges");
  }
  if (draining_.has_value()) {
    return absl::FailedPreconditionError(absl::StrCat(
        Describe(draining_->id), " is being drained; add after it stopped"));
  }
  absl::StatusOr<ReplicaMap> next = replica_map_->WithServerAdded();
  if (!next.ok()) return next.status();
  return postoffice_->num_servers();
}

void Scheduler::AdmitAddedServer(pb::Node node, int rank) {
  absl::StatusOr<ReplicaMap> target = replica_map_->WithServerAdded();
  if (!target.ok()) {  // checked by AddedServerRank under the same lock
    LOG(ERROR) << "adding a server: " << target.status();
    return;
  }
  const int id = ServerRankToId(rank);
  node.set_rank(rank);
  node.set_id(id);
  table_.push_back(node);
  postoffice_->AddServer(node);
  last_seen_[id] = absl::Now();
  postoffice_->van()->AdmitIdentity(node.transport_id());
  postoffice_->van()->Connect(node);
  const int64_t led = std::count(target->ranges().owners().begin(),
                                 target->ranges().owners().end(), rank);
  LOG(WARNING) << "server from " << node.host() << ":" << node.port()
               << " is added as server " << rank << " (node " << id
               << "); it copies " << target->CopiesHeldBy(rank) << " of "
               << target->ranges().owners().size() << " key ranges (leading "
               << led << ") while the job goes on";
  // The others first, so that its copy requests find them knowing it.
  pb::Control back;
  back.set_cmd(pb::COMMAND_NODE_BACK);
  *back.add_nodes() = node;
  SendToLiveNodes(back, id);
  pb::Control reply;
  reply.set_cmd(pb::COMMAND_ADD_NODE);
  for (const pb::Node& n : table_) *reply.add_nodes() = n;
  target->ToControl(&reply);
  reply.set_added_server(true);
  adding_ = AddingServer{id, absl::Now(), *std::move(target)};
  SendControl(id, std::move(reply));
}

void Scheduler::HandleAddedCaughtUp() {
  AddingServer added = *std::move(adding_);
  adding_.reset();
  const absl::Duration took = absl::Now() - added.since;
  if (added.target.version() != replica_map_->version() + 1) {
    // A failover moved the map on meanwhile: the copy may miss ranges.
    LOG(ERROR) << Describe(added.id) << " caught up, but the key-range map "
               << "moved to version " << replica_map_->version()
               << " meanwhile; it is not given its share";
    AnswerCaughtUp(
        added.id,
        absl::StrCat("a failover moved the key-range map to version ",
                     replica_map_->version(), " while it copied its share"));
    return;
  }
  const int rank = (added.id - ServerRankToId(0)) / 2;
  int64_t moved = 0;
  for (size_t i = 0; i < added.target.ranges().owners().size(); ++i) {
    moved +=
        added.target.ranges().owners()[i] != replica_map_->ranges().owners()[i];
  }
  replica_map_ = std::move(added.target);
  MetricsRegistry* metrics = postoffice_->metrics();
  SetMapVersionGauge();
  metrics
      ->GetCounter("petrel_scheduler_servers_added_total",
                   "Servers added to the running job (elastic).")
      ->Increment();
  metrics
      ->GetCounter("petrel_scheduler_elastic_ranges_moved_total",
                   "Key-range replicas moved to added servers.")
      ->Increment(replica_map_->CopiesHeldBy(rank));
  LOG(WARNING) << Describe(added.id) << " was added after "
               << absl::FormatDuration(took) << ": key-range map version "
               << replica_map_->version() << "; it holds "
               << replica_map_->CopiesHeldBy(rank) << " of "
               << replica_map_->ranges().owners().size() << " ranges and leads "
               << moved << " (moved to it); " << replica_map_->live_servers()
               << " live servers";
  SendToLiveNodes(NodeBackWithMap(added.id), -1);
  AnswerCaughtUp(added.id, "");
}

}  // namespace petrel
