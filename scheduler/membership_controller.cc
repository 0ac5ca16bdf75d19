// The changes of a replicated job's servers that a server's death or join
// starts (docs/failures.md):
// - Failover ("Replicated servers"): on a server's death, promote a replica
//   for each range it led and publish the next key-range map with the
//   NODE_DEAD notice, instead of failing the job.
// - Replacement ("Replacement servers"): a server that joins a formed job
//   takes a dead server's id and rank, copies the ranges of that rank from
//   their live primaries while the job goes on, and, once it reports that
//   it holds them, the map with it as a replica again is published.
// - Elastic servers ("Elastic servers"): a server that asks to be added
//   (petrel-server --add_server) becomes the next server rank and gets the
//   map in which it holds its fair share of whole key ranges
//   (ReplicaMap::WithServerAdded); it copies them from their current
//   primaries, and once it reports that it holds them the map is published.
// Draining a server is in membership_drain.cc.
#include "scheduler/membership_controller.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

namespace petrel {

MembershipController::MembershipController(Postoffice* postoffice, int replicas,
                                           Host* host)
    : postoffice_(postoffice), replicas_(replicas), host_(host) {}

int MembershipController::ResolvedReplicas() const {
  return ReplicaMap::Resolve(replicas_, postoffice_->num_servers());
}

void MembershipController::SetMapVersionGauge() {
  postoffice_->metrics()
      ->GetGauge("petrel_key_range_map_version",
                 "Version of the key-range map this node routes by (bumped "
                 "by each change: a failover, a replacement, an added or a "
                 "drained server).")
      ->Set(static_cast<double>(map_->version()));
}

int64_t MembershipController::SetUnderReplicatedGauge() {
  const int64_t under = map_->under_replicated_ranges();
  postoffice_->metrics()
      ->GetGauge("petrel_scheduler_under_replicated_ranges",
                 "Key ranges with fewer live copies than the job's "
                 "replication factor.")
      ->Set(static_cast<double>(under));
  return under;
}

pb::Control MembershipController::NodeBackWithMap(int id) const {
  pb::Control back;
  back.set_cmd(pb::COMMAND_NODE_BACK);
  for (const pb::Node& n : host_->table()) {
    if (n.id() == id) *back.add_nodes() = n;
  }
  map_->ToControl(&back);
  return back;
}

bool MembershipController::FailOver(const pb::Node& node, pb::Control* notice) {
  if (!map_.has_value() || map_->replicas() < 2) return false;
  if (replacing_.contains(node.id())) return DropReplacement(node);
  absl::StatusOr<ReplicaMap> next = map_->WithoutServer(node.rank());
  if (!next.ok()) {
    LOG(ERROR) << "cannot fail over " << host_->Describe(node.id()) << ": "
               << next.status().message();
    return false;
  }
  const int successor = next->SuccessorOf(node.rank());
  if (successor < 0) return false;
  map_ = *std::move(next);
  NoteMapForReplacements();
  lost_servers_.insert(node.id());
  map_->ToControl(notice);
  notice->set_successor(ServerRankToId(successor));
  postoffice_->metrics()
      ->GetCounter("petrel_scheduler_failovers_total",
                   "Servers declared dead whose key ranges a replica took "
                   "over (the job went on).")
      ->Increment();
  SetMapVersionGauge();
  const int64_t under = SetUnderReplicatedGauge();
  LOG(WARNING) << host_->Describe(node.id()) << ": its key ranges fail over to "
               << host_->Describe(ServerRankToId(successor))
               << "; key-range map version " << map_->version()
               << "; running with fewer replicas: " << under << " of "
               << map_->ranges().owners().size() << " ranges have < "
               << map_->replicas() << " live copies (" << map_->live_servers()
               << " live servers)";
  // Barriers of the server group no longer wait for it.
  host_->PassServerBarriers();
  return true;
}

absl::StatusOr<int> MembershipController::JoinRank(const pb::Node& node) const {
  if (node.role() != pb::ROLE_SERVER) {
    return absl::FailedPreconditionError(
        "the cluster is already complete (only a server may join a running "
        "job, to replace a dead one)");
  }
  if (!map_.has_value() || map_->replicas() < 2) {
    return absl::FailedPreconditionError(
        "the cluster is already complete and its servers are not replicated "
        "(--replicas=1): a replacement server has nothing to copy from");
  }
  if (node.add_server()) return AddedServerRank();
  const int n = postoffice_->num_servers();
  auto free = [&](int r) {
    return map_->dead(r) && !replacing_.contains(ServerRankToId(r)) &&
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

void MembershipController::Admit(pb::Node node, int rank) {
  if (node.add_server()) {
    AdmitAddedServer(std::move(node), rank);
  } else {
    AdmitReplacement(std::move(node), rank);
  }
}

void MembershipController::AdmitReplacement(pb::Node node, int rank) {
  const int id = ServerRankToId(rank);
  node.set_rank(rank);
  node.set_id(id);
  for (pb::Node& n : host_->table()) {
    if (n.id() == id) n = node;
  }
  replacing_[id] = {rank, absl::Now(), {}};
  NoteMapForReplacements();
  host_->AdmitServer(node);
  LOG(WARNING) << "server from " << node.host() << ":" << node.port()
               << " replaces server " << rank << " (node " << id
               << "); it copies its key ranges while the job goes on";
  SendJoined(node, *map_, /*added=*/false);
}

bool MembershipController::DropReplacement(const pb::Node& node) {
  // Its rank is still dead in the map, so nothing routes to it: the job
  // goes on as before it joined, and the rank waits for another
  // replacement. The live nodes' requests to it (the forwarded copies of
  // its sources) end with the NODE_DEAD notice, which names no successor.
  const Replacing& r = replacing_.at(node.id());
  // petrel-launch reads this line as it reads a failover's (a server
  // rank to replace).
  LOG(WARNING) << host_->Describe(node.id())
               << ": a replacement that died while copying its key ranges, "
               << absl::FormatDuration(absl::Now() - r.since)
               << " after it joined; server " << r.rank
               << " waits for another replacement (key-range map version "
               << map_->version() << " stays)";
  replacing_.erase(node.id());
  postoffice_->metrics()
      ->GetCounter("petrel_scheduler_replacements_lost_total",
                   "Replacement servers that died before they caught up "
                   "(their rank waits for another replacement).")
      ->Increment();
  return true;
}

void MembershipController::SendJoined(const pb::Node& node,
                                      const ReplicaMap& map, bool added) {
  // The others first, so that its copy requests find them knowing it.
  pb::Control back;
  back.set_cmd(pb::COMMAND_NODE_BACK);
  *back.add_nodes() = node;
  host_->SendToLiveNodes(back, node.id());
  pb::Control reply;
  reply.set_cmd(pb::COMMAND_ADD_NODE);
  for (const pb::Node& n : host_->table()) *reply.add_nodes() = n;
  map.ToControl(&reply);
  reply.set_added_server(added);
  host_->SendControl(node.id(), std::move(reply));
}

void MembershipController::NoteMapForReplacements() {
  for (auto& [id, r] : replacing_) {
    r.sources[map_->version()] = map_->CopySources(r.rank);
  }
}

void MembershipController::AnswerCaughtUp(int sender,
                                          const std::string& refused) {
  pb::Control answer;
  answer.set_cmd(pb::COMMAND_CAUGHT_UP);
  answer.set_reason(refused);
  answer.set_map_version(map_.has_value() ? map_->version() : 0);
  host_->SendControl(sender, std::move(answer));
}

void MembershipController::HandleCaughtUp(int sender, uint64_t version) {
  // A server that copied for a drain is answered at once; a replacement's
  // or an added server's CAUGHT_UP is checked against the map its copies
  // were made by.
  if (HandleDrainCaughtUp(sender)) {
    AnswerCaughtUp(sender, "");
  } else if (adding_.has_value() && adding_->id == sender) {
    HandleAddedCaughtUp();
  } else {
    HandleReplacementCaughtUp(sender, version);
  }
}

void MembershipController::HandleReplacementCaughtUp(int sender,
                                                     uint64_t version) {
  auto it = replacing_.find(sender);
  if (it == replacing_.end() || !map_.has_value()) {
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
      then->second != map_->CopySources(rank)) {
    const std::string reason = absl::StrCat(
        "its copies were made against key-range map version ", version,
        then == it->second.sources.end() ? ", not one published while it copied"
                                         : ", and a source of them died since",
        " (the map is at version ", map_->version(), ")");
    LOG(WARNING) << "refusing the CAUGHT_UP of replacement "
                 << host_->Describe(sender) << ": " << reason;
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
  absl::StatusOr<ReplicaMap> next = map_->WithServerBack(rank);
  if (!next.ok()) {
    LOG(ERROR) << "replacement " << host_->Describe(sender) << ": "
               << next.status();
    AnswerCaughtUp(sender, std::string(next.status().message()));
    return;
  }
  map_ = *std::move(next);
  NoteMapForReplacements();
  lost_servers_.erase(sender);
  const int64_t under = map_->under_replicated_ranges();
  SetMapVersionGauge();
  SetUnderReplicatedGauge();
  postoffice_->metrics()
      ->GetCounter("petrel_scheduler_replacements_total",
                   "Replacement servers that copied a dead server's ranges "
                   "and became replicas.")
      ->Increment();
  LOG(WARNING) << host_->Describe(sender) << " caught up after "
               << absl::FormatDuration(took)
               << " and is a replica again; key-range map version "
               << map_->version() << "; " << under << " of "
               << map_->ranges().owners().size() << " ranges have fewer than "
               << map_->replicas() << " live copies (" << map_->live_servers()
               << " live servers)";
  host_->SendToLiveNodes(NodeBackWithMap(sender), -1);
  AnswerCaughtUp(sender, "");
}

absl::StatusOr<int> MembershipController::AddedServerRank() const {
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
    return absl::FailedPreconditionError(
        absl::StrCat(host_->Describe(draining_->id),
                     " is being drained; add after it stopped"));
  }
  absl::StatusOr<ReplicaMap> next = map_->WithServerAdded();
  if (!next.ok()) return next.status();
  return postoffice_->num_servers();
}

void MembershipController::AdmitAddedServer(pb::Node node, int rank) {
  absl::StatusOr<ReplicaMap> target = map_->WithServerAdded();
  if (!target.ok()) {  // checked by AddedServerRank under the same lock
    LOG(ERROR) << "adding a server: " << target.status();
    return;
  }
  const int id = ServerRankToId(rank);
  node.set_rank(rank);
  node.set_id(id);
  host_->table().push_back(node);
  postoffice_->AddServer(node);
  host_->AdmitServer(node);
  const int64_t led = std::count(target->ranges().owners().begin(),
                                 target->ranges().owners().end(), rank);
  LOG(WARNING) << "server from " << node.host() << ":" << node.port()
               << " is added as server " << rank << " (node " << id
               << "); it copies " << target->CopiesHeldBy(rank) << " of "
               << target->ranges().owners().size() << " key ranges (leading "
               << led << ") while the job goes on";
  adding_ = AddingServer{id, absl::Now(), *std::move(target)};
  SendJoined(node, adding_->target, /*added=*/true);
}

void MembershipController::HandleAddedCaughtUp() {
  AddingServer added = *std::move(adding_);
  adding_.reset();
  const absl::Duration took = absl::Now() - added.since;
  if (added.target.version() != map_->version() + 1) {
    // A failover moved the map on meanwhile: the copy may miss ranges.
    LOG(ERROR) << host_->Describe(added.id)
               << " caught up, but the key-range map moved to version "
               << map_->version() << " meanwhile; it is not given its share";
    AnswerCaughtUp(
        added.id, absl::StrCat("a failover moved the key-range map to version ",
                               map_->version(), " while it copied its share"));
    return;
  }
  const int rank = (added.id - ServerRankToId(0)) / 2;
  int64_t moved = 0;
  for (size_t i = 0; i < added.target.ranges().owners().size(); ++i) {
    moved += added.target.ranges().owners()[i] != map_->ranges().owners()[i];
  }
  map_ = std::move(added.target);
  MetricsRegistry* metrics = postoffice_->metrics();
  SetMapVersionGauge();
  metrics
      ->GetCounter("petrel_scheduler_servers_added_total",
                   "Servers added to the running job (elastic).")
      ->Increment();
  metrics
      ->GetCounter("petrel_scheduler_elastic_ranges_moved_total",
                   "Key-range replicas moved to added servers.")
      ->Increment(map_->CopiesHeldBy(rank));
  LOG(WARNING) << host_->Describe(added.id) << " was added after "
               << absl::FormatDuration(took) << ": key-range map version "
               << map_->version() << "; it holds " << map_->CopiesHeldBy(rank)
               << " of " << map_->ranges().owners().size()
               << " ranges and leads " << moved << " (moved to it); "
               << map_->live_servers() << " live servers";
  host_->SendToLiveNodes(NodeBackWithMap(added.id), -1);
  AnswerCaughtUp(added.id, "");
}

}  // namespace petrel
