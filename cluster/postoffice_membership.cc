// Postoffice: how a node follows the cluster's changes (docs/failures.md).
// Kept apart from joining, barriers and dispatch in postoffice.cc.
//
// - Failover ("Replicated servers"): the scheduler's NODE_DEAD of a
//   replicated server carries the next key-range map, which replaces this
//   node's (HandleNodeDead installs it before it marks the server dead).
// - The map hold (cluster/map_hold.h): a server holds a worker's request
//   sliced by a newer map than its own until that map comes.
// - Replacement servers ("Replacement servers"): a server started against
//   a running replicated job takes a dead server's id and rank; every live
//   node connects to its new address, forgets the dead one, and, once the
//   replacement holds its copy, routes by the map that counts it as a
//   replica again.
// - Elastic servers ("Elastic servers"): a server added to a running job is
//   one more server of the table and of the ring: every node learns it from
//   the scheduler's NODE_BACK, connects to it, and routes by the map that
//   gives it its share once it holds it. Draining a server: a server that
//   gains copies under the drained map copies them when the scheduler asks
//   (DRAIN_COPY); every live node answers the scheduler's DRAIN_QUERY once
//   it routes by the drained map, routes no request at the moment
//   (Postoffice::RoutingScope) and waits for no answer from the drained
//   server.
// - The scheduler's death ("The scheduler's death"): the watch on the
//   scheduler (it answers every heartbeat), the rejoin that lets a
//   scheduler restarted with --recover rebuild the node table, and the
//   bounded give-up.
//
// Rebinding: the one place where a node accepts a new scheduler connection
// is here. While the scheduler is lost the van accepts join replies from an
// unknown connection (Van::set_rejoining, as before the first join); the
// restarted scheduler's reply to a rejoin carries its own node, whose
// transport identity HandleRejoinReply binds to kSchedulerId (Connect).
#include <algorithm>
#include <cstdint>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

#include "base/out_of_job.h"
#include "cluster/customer.h"
#include "cluster/postoffice.h"

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

bool Postoffice::HoldIfAheadOfMap(Message& msg, absl::Time now) {
  if (!is_server() || !msg.meta.request() || !IsWorkerId(msg.meta.sender())) {
    return false;
  }
  return map_hold_.Hold(msg, map_version_.load(std::memory_order_acquire), now,
                        my_id());
}

void Postoffice::ReleaseHeldRequests(absl::Time now) {
  std::vector<Message> ready = map_hold_.Release(
      map_version_.load(std::memory_order_acquire), now, my_id());
  for (Message& m : ready) DispatchData(std::move(m));
}

bool Postoffice::InstallNewerMap(const pb::Control& control) {
  absl::StatusOr<ReplicaMap> map =
      ReplicaMap::FromControl(control, num_servers_);
  if (!map.ok() || map->replicas() < 2) {
    LOG(ERROR) << "key-range map from the scheduler is unusable: "
               << (map.ok() ? "not replicated" : map.status().ToString());
    return false;
  }
  if (map->version() <= map_version_.load(std::memory_order_acquire)) {
    return true;
  }
  LOG(INFO) << "node " << my_id() << ": key-range map version "
            << map->version() << " (" << map->live_servers()
            << " live servers, " << map->under_replicated_ranges()
            << " range(s) with fewer than " << map->replicas() << " replicas)";
  SetReplicaMap(*std::move(map));
  return true;
}

void Postoffice::HandleNodeBack(const pb::Control& control) {
  if (control.nodes_size() != 1 || control.nodes(0).role() != pb::ROLE_SERVER ||
      !IsServerId(control.nodes(0).id())) {
    return;
  }
  const pb::Node& node = control.nodes(0);
  const int id = node.id();
  bool revived = false;
  bool added = false;
  {
    absl::MutexLock lock(&mu_);
    if (!joined_) return;
    if (id != my_id()) {
      added = AddServerLocked(node);  // an added server (elastic)
      for (pb::Node& n : nodes_) {
        if (n.id() == id) n = node;
      }
      revived = dead_.erase(id) > 0;
      if (dead_.empty() && !abandoned_.has_value()) {
        any_dead_.store(false, std::memory_order_release);
      }
    }
    if (control.ranges_size() > 0) InstallNewerMap(control);
  }
  if (added) {
    van_->Connect(node);
    LOG(WARNING) << "node " << my_id() << ": server " << node.rank()
                 << " (node " << id << ") joins the job at " << node.host()
                 << ":" << node.port() << " (an added server)";
    return;
  }
  if (!revived) return;
  van_->Connect(node);
  ForEachCustomer([id](Customer* c) { c->ForgetPeer(id); });
  LOG(WARNING) << "node " << my_id() << ": node " << id << " (server "
               << node.rank() << ") is back at " << node.host() << ":"
               << node.port() << " (a replacement)";
}

void Postoffice::HandleCaughtUpAnswer(const pb::Control& control) {
  absl::MutexLock lock(&mu_);
  caught_up_answer_ =
      control.reason().empty()
          ? absl::OkStatus()
          : absl::UnavailableError(absl::StrCat(
                "the scheduler refused its CAUGHT_UP: ", control.reason()));
}

absl::Status Postoffice::SendCaughtUp(uint64_t version,
                                      absl::Duration timeout) {
  {
    absl::MutexLock lock(&mu_);
    caught_up_answer_.reset();
  }
  Message msg;
  msg.meta.set_recipient(kSchedulerId);
  msg.meta.set_request(true);
  msg.meta.mutable_control()->set_cmd(pb::COMMAND_CAUGHT_UP);
  msg.meta.mutable_control()->set_map_version(version);
  if (absl::Status s = Send(std::move(msg)); !s.ok()) return s;
  absl::MutexLock lock(&mu_);
  auto answered = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) -> bool {
    return caught_up_answer_.has_value() || terminated_.has_value();
  };
  if (!mu_.AwaitWithTimeout(absl::Condition(&answered), timeout)) {
    return absl::DeadlineExceededError(
        absl::StrCat("no answer from the scheduler to CAUGHT_UP within ",
                     absl::FormatDuration(timeout)));
  }
  if (caught_up_answer_.has_value()) return *caught_up_answer_;
  return *terminated_;
}

bool Postoffice::AddServerLocked(const pb::Node& node) {
  for (const pb::Node& n : nodes_) {
    if (n.id() == node.id()) return false;
  }
  nodes_.push_back(node);
  num_servers_ = std::max(num_servers_, node.rank() + 1);
  return true;
}

void Postoffice::AddServer(const pb::Node& node) {
  absl::MutexLock lock(&mu_);
  AddServerLocked(node);
}

bool Postoffice::joined_as_added() const {
  absl::MutexLock lock(&mu_);
  return joined_as_added_;
}

void Postoffice::HandleDrainCopy(const pb::Control& control) {
  if (control.drain_sources_size() != control.drain_ranges_size() ||
      !drain_copy_hook_) {
    LOG(ERROR) << "node " << my_id() << ": ignoring a DRAIN_COPY ("
               << (drain_copy_hook_ ? "malformed"
                                    : "this node copies no "
                                      "ranges")
               << ")";
    return;
  }
  std::map<int, std::vector<int>> by_source;
  for (int i = 0; i < control.drain_sources_size(); ++i) {
    by_source[control.drain_sources(i)].push_back(control.drain_ranges(i));
  }
  drain_copy_hook_({by_source.begin(), by_source.end()});
}

bool Postoffice::Retired(int id) const {
  absl::MutexLock lock(&mu_);
  return retired_.contains(id);
}

void Postoffice::HandleDrainQuery(const pb::Control& control) {
  if (map_version() < control.map_version()) return;
  const int drained = control.drained_node();
  // The last round: from the answer on, no clock goes to the drained
  // server (a worker's clock is routed by the node table, not the map).
  // Marked before the checks below, so that a clock routed meanwhile
  // either sees the mark or holds a RoutingScope (checked after).
  const bool retire = control.drain_retire();
  if (retire) {
    absl::MutexLock lock(&mu_);
    retired_.insert(drained);
  }
  auto not_yet = [this, retire, drained] {
    if (retire) {
      absl::MutexLock lock(&mu_);
      retired_.erase(drained);
    }
  };
  // A request routed by the map before this one may be between its
  // routing and its registration (RoutingScope): not yet.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (routing_.load(std::memory_order_acquire) > 0) return not_yet();
  bool waiting = false;
  ForEachCustomer([&waiting, drained](Customer* c) {
    waiting = waiting || c->HasPendingTo(drained);
  });
  if (waiting) return not_yet();  // the scheduler asks again
  Message msg;
  msg.meta.set_recipient(kSchedulerId);
  msg.meta.set_request(true);
  pb::Control* done = msg.meta.mutable_control();
  done->set_cmd(pb::COMMAND_DRAIN_DONE);
  done->set_drained_node(drained);
  done->set_map_version(control.map_version());
  done->set_drain_retire(retire);  // which round it answers
  Send(std::move(msg)).IgnoreError();
}

std::string Postoffice::SchedulerAddress() const {
  return absl::StrCat(options_.scheduler_host, ":", options_.scheduler_port);
}

void Postoffice::Terminate(const absl::Status& status) {
  {
    absl::MutexLock lock(&mu_);
    if (terminated_.has_value()) return;
    terminated_ = status;
  }
  // Nothing will answer any more: pending requests end now, with the
  // job's reason, rather than at their deadline.
  if (!status.ok()) AbandonRequests(status);
}

void Postoffice::OnSchedulerWatch(SchedulerWatch::Action action,
                                  absl::Time now) {
  absl::Duration silent;
  {
    absl::MutexLock lock(&mu_);
    silent = scheduler_watch_.silent_for(now);
  }
  silent = absl::Trunc(silent, absl::Milliseconds(100));
  switch (action) {
    case SchedulerWatch::Action::kNone:
      return;
    case SchedulerWatch::Action::kLost:
      van_->set_rejoining(true);
      LOG(WARNING) << "lost the scheduler " << SchedulerAddress()
                   << " (nothing heard for " << absl::FormatDuration(silent)
                   << "); pushes and pulls go on; waiting up to "
                   << absl::FormatDuration(options_.scheduler_grace)
                   << " for it to return (restart it with --recover)";
      SendRejoin();
      return;
    case SchedulerWatch::Action::kRejoin:
      SendRejoin();
      return;
    case SchedulerWatch::Action::kGiveUp: {
      const std::string line = absl::StrCat(
          "scheduler ", SchedulerAddress(), " unreachable for ",
          absl::FormatDuration(absl::Trunc(silent, absl::Seconds(1))),
          "; stopping");
      LOG(ERROR) << line;
      // What is queued for it (rejoins) need not hold up the exit.
      van_->MarkPeerDead(kSchedulerId);
      Terminate(absl::UnavailableError(line));
      return;
    }
  }
}

void Postoffice::SendRejoin() {
  Message msg = JoinRequest();
  pb::Control* control = msg.meta.mutable_control();
  pb::Node* self = control->mutable_nodes(0);
  {
    absl::MutexLock lock(&mu_);
    self->set_rank(my_rank_);
    // The map this node routes by, replicas and version included: a
    // restarted scheduler takes the newest one the nodes report.
    if (replica_map_.has_value()) {
      replica_map_->ToControl(control);
    } else if (ranges_.has_value()) {
      for (uint64_t b : ranges_->begins()) control->add_ranges(b);
      for (int32_t o : ranges_->owners()) control->add_range_owners(o);
    }
  }
  VLOG(1) << "asking the scheduler " << SchedulerAddress() << " to rejoin";
  Send(std::move(msg)).IgnoreError();
}

void Postoffice::HandleRejoinReply(const pb::Control& control) {
  // The answer to a rejoin lists the scheduler's node and this node's.
  const pb::Node* scheduler = nullptr;
  for (const pb::Node& node : control.nodes()) {
    if (node.id() == kSchedulerId) scheduler = &node;
  }
  if (scheduler == nullptr) return;  // the first join's answer, repeated
  std::vector<std::pair<int, uint64_t>> barriers;
  bool worker_done = false;
  absl::Duration gone;
  {
    absl::MutexLock lock(&mu_);
    if (!scheduler_watch_.lost()) return;  // a repeated answer
    // The (maybe new) scheduler's identity: its messages are accepted from
    // now on, like those of the first. Its address stays the one this node
    // joined by, and its CURVE key the configured one: a node takes neither
    // from the wire.
    pb::Node bound = *scheduler;
    bound.set_host(options_.scheduler_host);
    bound.set_port(options_.scheduler_port);
    bound.clear_curve_public_key();
    van_->Connect(bound);
    van_->set_rejoining(false);
    gone = scheduler_watch_.Rejoined(absl::Now());
    for (const auto& [group, sent] : barrier_sent_) {
      auto it = barrier_done_.find(group);
      if (it == barrier_done_.end() || it->second < sent) {
        barriers.emplace_back(group, sent);
      }
    }
    worker_done = worker_done_sent_;
  }
  LOG(WARNING) << "the scheduler " << SchedulerAddress() << " took node "
               << my_id() << " back after "
               << absl::FormatDuration(
                      absl::Trunc(gone, absl::Milliseconds(100)))
               << (barriers.empty() ? "" : "; sending its barriers again")
               << (worker_done ? "; reporting this worker finished again" : "");
  // A restarted scheduler knows nothing of them.
  for (const auto& [group, epoch] : barriers) {
    Message msg;
    msg.meta.set_recipient(kSchedulerId);
    msg.meta.set_request(true);
    msg.meta.mutable_control()->set_cmd(pb::COMMAND_BARRIER);
    msg.meta.mutable_control()->set_barrier_group(group);
    msg.meta.mutable_control()->set_barrier_epoch(epoch);
    Send(std::move(msg)).IgnoreError();
  }
  if (worker_done) {
    Message msg;
    msg.meta.set_recipient(kSchedulerId);
    msg.meta.set_request(true);
    msg.meta.mutable_control()->set_cmd(pb::COMMAND_WORKER_DONE);
    Send(std::move(msg)).IgnoreError();
  }
}

void Postoffice::HandleRejoinRefused(const pb::Control& control) {
  {
    absl::MutexLock lock(&mu_);
    if (!scheduler_watch_.lost()) return;
  }
  // Declared dead while it was away (paused, cut off): the job went on
  // without it, so it leaves quietly (exit kExitOutOfJob), not as failed.
  // Both ways a node learns it was declared dead (this refusal, or a
  // NODE_DEAD naming it) say "is out of the job".
  const std::string line = absl::StrCat(
      "the scheduler ", SchedulerAddress(),
      " refused to take this node back: ", control.reason(),
      control.out_of_job() ? "; this node is out of the job, stopping" : "");
  LOG(ERROR) << line;
  Terminate(control.out_of_job() ? OutOfJobError(line)
                                 : absl::FailedPreconditionError(line));
}

}  // namespace petrel
