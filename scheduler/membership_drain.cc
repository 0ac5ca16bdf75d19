// MembershipController: draining a server (docs/failures.md, "Elastic
// servers"): `petrelctl drain-server --node=ID` asks it to remove a live
// server from a running replicated job. It computes the map without the
// server (ReplicaMap::WithServerDrained) and asks each server that gains
// copies there to copy them from their current primaries (DRAIN_COPY; the
// primaries forward later pushes to them). Once all of them report
// CAUGHT_UP it publishes the map (version + 1), to the servers first: a
// server that still routed by the old map when a worker's push sliced by
// the new one reached it would forward that push to its old backups only,
// missing the range's new replica. Once every live server answered
// DRAIN_QUERY (it routes by the new map and waits for no answer from the
// drained server) the workers get the map; once every live node answered
// it too, and once more with drain_retire (from then on a worker sends the
// drained server no clock; until then a pull it holds by the old map may
// wait for the workers' clocks), the drained server is told to stop
// (TERMINATE). Until then it
// applies the requests sliced by the old map and forwards them to the
// ranges' replicas in the new one.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

#include "scheduler/membership_controller.h"

namespace petrel {
namespace {

// A drain whose copies did not all arrive within this long is abandoned
// (the map is not published; the server stays).
constexpr absl::Duration kDrainCopyTimeout = absl::Minutes(5);

}  // namespace

absl::Status MembershipController::RequestDrain(int id) {
  const pb::Node* node = nullptr;
  for (const pb::Node& n : host_->table()) {
    if (n.id() == id) node = &n;
  }
  if (node == nullptr) {
    return absl::NotFoundError(absl::StrCat("node ", id, " is not in the job"));
  }
  if (node->role() != pb::ROLE_SERVER) {
    return absl::FailedPreconditionError(
        absl::StrCat("node ", id, " is a ",
                     node->role() == pb::ROLE_WORKER ? "worker" : "scheduler",
                     ", not a server"));
  }
  const int rank = node->rank();
  if (drained_.contains(id)) {
    return absl::FailedPreconditionError(
        absl::StrCat(host_->Describe(id), " was drained already"));
  }
  if (host_->IsDead(id) || (map_.has_value() && map_->dead(rank))) {
    return absl::FailedPreconditionError(
        absl::StrCat(host_->Describe(id), " is dead, not a live server"));
  }
  if (!map_.has_value() || map_->replicas() < 2) {
    return absl::FailedPreconditionError(
        "the job's servers are not replicated (--replicas=1): a drained "
        "server's key ranges would have no other copy");
  }
  if (draining_.has_value()) {
    return absl::FailedPreconditionError(
        absl::StrCat(host_->Describe(draining_->id),
                     " is being drained; drain one at a time"));
  }
  if (adding_.has_value()) {
    return absl::FailedPreconditionError(
        "a server is being added; drain after it caught up");
  }
  if (!replacing_.empty()) {
    return absl::FailedPreconditionError(
        "a replacement server is still copying its key ranges");
  }
  absl::StatusOr<ReplicaMap> target = map_->WithServerDrained(rank);
  if (!target.ok()) return target.status();
  DrainingServer drain{id, rank, absl::Now(), *target, {}, false, 0, {}};
  int64_t copies = 0;
  for (int r = 0; r < postoffice_->num_servers(); ++r) {
    if (r == rank || target->dead(r)) continue;
    const auto sources = target->NewCopiesOf(*map_, r);
    if (sources.empty()) continue;
    pb::Control copy;
    copy.set_cmd(pb::COMMAND_DRAIN_COPY);
    copy.set_drained_node(id);
    copy.set_map_version(target->version());
    for (const auto& [source, ranges] : sources) {
      for (int range : ranges) {
        copy.add_drain_sources(source);
        copy.add_drain_ranges(range);
        ++copies;
      }
    }
    drain.copying.insert(ServerRankToId(r));
    host_->SendControl(ServerRankToId(r), std::move(copy));
  }
  LOG(WARNING) << "draining " << host_->Describe(id) << ": " << copies
               << " key-range copies go to " << drain.copying.size()
               << " other server(s) while the job goes on";
  const bool none = drain.copying.empty();
  draining_ = std::move(drain);
  if (none) PublishDrainedMap();
  return absl::OkStatus();
}

bool MembershipController::HandleDrainCaughtUp(int sender) {
  if (!draining_.has_value() || draining_->published ||
      !draining_->copying.contains(sender)) {
    return false;
  }
  draining_->copying.erase(sender);
  LOG(INFO) << host_->Describe(sender)
            << " holds its new copies for the drain of "
            << host_->Describe(draining_->id);
  if (draining_->copying.empty()) PublishDrainedMap();
  return true;
}

void MembershipController::PublishDrainedMap() {
  if (draining_->target.version() != map_->version() + 1) {
    // A failover or replacement moved the map on meanwhile.
    LOG(ERROR) << "the drain of " << host_->Describe(draining_->id)
               << " is abandoned: the key-range map moved to version "
               << map_->version() << " during its copies";
    draining_.reset();
    return;
  }
  map_ = draining_->target;
  draining_->published = true;
  draining_->round = 0;
  SetMapVersionGauge();
  LOG(WARNING) << "drain of " << host_->Describe(draining_->id)
               << ": its copies are made after "
               << absl::FormatDuration(absl::Now() - draining_->since)
               << "; key-range map version " << map_->version()
               << " without it (" << map_->live_servers()
               << " live servers) goes to the servers, then to the workers";
  SendDrainedMap(/*servers=*/true);
  QueryDrain();
}

void MembershipController::SendDrainedMap(bool servers) {
  const pb::Control back = NodeBackWithMap(draining_->id);
  for (const pb::Node& n : host_->table()) {
    if (n.id() == kSchedulerId || host_->IsDead(n.id()) ||
        (n.role() == pb::ROLE_SERVER) != servers) {
      continue;
    }
    host_->SendControl(n.id(), back);
  }
}

std::vector<int> MembershipController::DrainWaitsFor() const {
  std::vector<int> out;
  for (const pb::Node& n : host_->table()) {
    const int id = n.id();
    if (id == kSchedulerId || id == draining_->id || drained_.contains(id) ||
        host_->WorkerGone(id) || lost_servers_.contains(id) ||
        (draining_->round == 0 && n.role() != pb::ROLE_SERVER)) {
      continue;
    }
    if (!host_->IsDead(id)) out.push_back(id);
  }
  return out;
}

void MembershipController::QueryDrain() {
  if (!draining_.has_value()) return;
  if (!draining_->published) {
    if (absl::Now() - draining_->since > kDrainCopyTimeout) {
      LOG(ERROR) << "the drain of " << host_->Describe(draining_->id)
                 << " is abandoned: " << draining_->copying.size()
                 << " server(s) did not copy their ranges within "
                 << absl::FormatDuration(kDrainCopyTimeout);
      draining_.reset();
    }
    return;
  }
  pb::Control query;
  query.set_cmd(pb::COMMAND_DRAIN_QUERY);
  query.set_drained_node(draining_->id);
  query.set_map_version(draining_->target.version());
  query.set_drain_retire(draining_->round == 2);
  for (int id : DrainWaitsFor()) {
    if (!draining_->confirmed.contains(id)) host_->SendControl(id, query);
  }
}

void MembershipController::HandleDrainDone(int sender,
                                           const pb::Control& control) {
  if (!draining_.has_value() || !draining_->published ||
      control.drained_node() != draining_->id ||
      control.map_version() != draining_->target.version() ||
      // A late answer to an earlier round (asked again at a tick) does
      // not say that the node stopped sending the drained server clocks.
      control.drain_retire() != (draining_->round == 2)) {
    return;
  }
  draining_->confirmed.insert(sender);
  for (int id : DrainWaitsFor()) {
    if (!draining_->confirmed.contains(id)) return;
  }
  if (draining_->round == 0) {
    // Every live server routes by the map: a push sliced by it finds its
    // new replicas. Now the workers.
    draining_->round = 1;
    draining_->confirmed.clear();
    LOG(INFO) << "drain of " << host_->Describe(draining_->id)
              << ": every live server routes by key-range map version "
              << draining_->target.version() << "; now the other nodes";
    SendDrainedMap(/*servers=*/false);
    QueryDrain();
    return;
  }
  if (draining_->round == 1) {
    // No node sends the drained server a request by the old map, and it
    // holds none: a pull it held for the workers' clocks was answered.
    // Now the nodes stop sending it clocks (they answer once none is
    // pending there).
    draining_->round = 2;
    draining_->confirmed.clear();
    QueryDrain();
    return;
  }
  FinishDrain();
}

void MembershipController::FinishDrain() {
  const int id = draining_->id;
  const absl::Duration took = absl::Now() - draining_->since;
  pb::Control stop;
  stop.set_cmd(pb::COMMAND_TERMINATE);
  stop.set_reason(absl::StrCat("server ", draining_->rank,
                               " was drained: its key ranges are on the "
                               "other servers (key-range map version ",
                               draining_->target.version(), ")"));
  host_->SendControl(id, std::move(stop));
  drained_.insert(id);
  lost_servers_.insert(id);
  postoffice_->metrics()
      ->GetCounter("petrel_scheduler_servers_drained_total",
                   "Servers drained out of the running job (elastic).")
      ->Increment();
  LOG(WARNING) << host_->Describe(id) << " was drained after "
               << absl::FormatDuration(took) << ": key-range map version "
               << map_->version() << ", " << map_->live_servers()
               << " live servers; it was told to stop";
  draining_.reset();
  // Barriers that waited for it pass without it.
  host_->PassServerBarriers();
}

}  // namespace petrel
