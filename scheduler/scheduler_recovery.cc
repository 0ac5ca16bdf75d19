// The scheduler's side of its own death: a scheduler restarted with
// --recover (SchedulerOptions::recover) rebuilds the node table from the
// nodes that rejoin with their ids (Postoffice::SendRejoin), and any
// scheduler acknowledges a rejoin of a node it knows (it only missed the
// node's heartbeats). Kept apart from admission in scheduler.cc.
#include "absl/strings/str_cat.h"
#include "glog/logging.h"

#include "base/out_of_job.h"
#include "base/secret_compare.h"
#include "scheduler/scheduler.h"

namespace petrel {
namespace {

std::string RoleName(pb::Role role) {
  return role == pb::ROLE_SERVER ? "server" : "worker";
}

}  // namespace

absl::Status Scheduler::CheckRejoin(const pb::Node& node,
                                    const PeerAuth& peer) {
  if (postoffice_->van()->options().curve.enabled()) {
    absl::Status s = CheckJoinKey(node, peer);
    if (!s.ok()) return s;
  }
  if (formed_) {
    for (const DeadNode& d : dead_) {
      if (d.node.id() == node.id()) {
        return OutOfJobError(absl::StrCat("node ", node.id(),
                                          " was declared dead (", d.reason,
                                          "); the job went on without it"));
      }
    }
    for (const pb::Node& n : table_) {
      if (n.id() == node.id() && n.transport_id() == node.transport_id() &&
          n.curve_public_key() == node.curve_public_key()) {
        return absl::OkStatus();
      }
    }
    return absl::FailedPreconditionError(
        absl::StrCat("node ", node.id(), " is not in this job's node table"));
  }
  if (!options_.recover) {
    return absl::FailedPreconditionError(
        "this scheduler started a new job; restart it with --recover to take "
        "over the running one");
  }
  if (node.role() != pb::ROLE_SERVER && node.role() != pb::ROLE_WORKER) {
    return absl::InvalidArgumentError("only servers and workers may rejoin");
  }
  const int expected = node.role() == pb::ROLE_SERVER
                           ? postoffice_->num_servers()
                           : postoffice_->num_workers();
  if (node.rank() < 0 || node.rank() >= expected) {
    return absl::InvalidArgumentError(
        absl::StrCat(RoleName(node.role()), " rank ", node.rank(),
                     " but the job has ", expected, " ", RoleName(node.role()),
                     "s (start this scheduler with "
                     "the job's --num_servers and --num_workers)"));
  }
  const int id = node.role() == pb::ROLE_SERVER ? ServerRankToId(node.rank())
                                                : WorkerRankToId(node.rank());
  if (node.id() != id) {
    return absl::InvalidArgumentError(
        absl::StrCat("node id ", node.id(), " does not belong to ",
                     RoleName(node.role()), " rank ", node.rank()));
  }
  auto it = rejoined_.find(id);
  if (it != rejoined_.end() &&
      it->second.transport_id() != node.transport_id()) {
    return absl::AlreadyExistsError(
        absl::StrCat("node ", id, " has rejoined from another process at ",
                     it->second.host(), ":", it->second.port()));
  }
  return absl::OkStatus();
}

void Scheduler::HandleRejoin(const Message& msg) {
  const pb::Control& control = msg.meta.control();
  pb::Node node = control.nodes(0);
  if (!SecretsEqual(control.auth_token(), options_.auth_token)) {
    // As for a join: no answer and no connection back to a stranger.
    postoffice_->van()->CountDrop("unauthenticated",
                                  absl::StrCat("rejoin of node ", node.id(),
                                               " with a wrong auth token "
                                               "from ",
                                               node.host(), ":", node.port()));
    return;
  }
  // Peers reach the node with the key it authenticated with, never one it
  // merely declared.
  const bool curve = postoffice_->van()->options().curve.enabled();
  node.set_curve_public_key(curve ? msg.peer.public_key : "");
  // Every answer names the node (its transport identity): a node that asks
  // to rejoin accepts nothing else from a connection it does not know
  // (van/wire_codec.cc).
  pb::Control reply;
  absl::Status s = CheckRejoin(node, msg.peer);
  if (!s.ok()) {
    LOG_EVERY_T(WARNING, 1.0)
        << "refused the rejoin of node " << node.id() << " from " << node.host()
        << ":" << node.port() << ": " << s.message();
    // The answer must be addressed to the node's id (a node that has one
    // drops a message for another recipient), but the refused process's
    // identity is bound to none: its connection stays a stranger's. A
    // process known under the id (one declared dead) gets it on its own
    // route; where the id routes to another process, no answer: the
    // refused node gives up after its grace.
    bool same_process = false;
    bool elsewhere = false;
    auto routes_to = [&](const pb::Node& n) {
      const bool same = n.transport_id() == node.transport_id();
      same_process = same_process || same;
      elsewhere = elsewhere || !same;
    };
    auto it = rejoined_.find(node.id());
    if (it != rejoined_.end()) routes_to(it->second);
    for (const pb::Node& n : table_) {
      if (n.id() == node.id()) routes_to(n);
    }
    if (elsewhere) return;
    if (!same_process) {
      pb::Node route = node;
      route.clear_transport_id();
      postoffice_->van()->Connect(route);
    }
    reply.set_cmd(pb::COMMAND_REJECT);
    reply.set_reason(std::string(s.message()));
    reply.set_out_of_job(IsOutOfJob(s));
    *reply.add_nodes() = node;
    SendControl(node.id(), std::move(reply));
    return;
  }
  postoffice_->van()->Connect(node);
  last_seen_[node.id()] = absl::Now();
  const bool fresh = !formed_ && (rejoined_.count(node.id()) == 0);
  if (fresh) {
    rejoined_[node.id()] = node;
    if (control.ranges_size() > 0 &&
        (!has_recovered_map_ ||
         control.map_version() > recovered_map_.map_version())) {
      recovered_map_.Clear();
      *recovered_map_.mutable_ranges() = control.ranges();
      *recovered_map_.mutable_range_owners() = control.range_owners();
      *recovered_map_.mutable_range_homes() = control.range_homes();
      recovered_map_.set_replicas(control.replicas());
      recovered_map_.set_map_version(control.map_version());
      has_recovered_map_ = true;
    }
    LOG(INFO) << RoleName(node.role()) << " " << node.rank() << " at "
              << node.host() << ":" << node.port() << " rejoined as node "
              << node.id() << " (" << rejoined_.size() << " of "
              << postoffice_->num_servers() + postoffice_->num_workers() << ")";
  } else {
    LOG_EVERY_T(INFO, 1.0) << "node " << node.id()
                           << " asked to rejoin; it is known";
  }
  // The answer carries this scheduler's node (the node binds its identity)
  // and the node's own.
  reply.set_cmd(pb::COMMAND_ADD_NODE);
  pb::Node* self = reply.add_nodes();
  *self = postoffice_->SelfNode();
  self->set_id(kSchedulerId);
  *reply.add_nodes() = node;
  SendControl(node.id(), std::move(reply));
  if (fresh && static_cast<int>(rejoined_.size()) ==
                   postoffice_->num_servers() + postoffice_->num_workers()) {
    CompleteRecovery();
  }
}

void Scheduler::CompleteRecovery() {
  table_.clear();
  pb::Node self = postoffice_->SelfNode();
  self.set_id(kSchedulerId);
  table_.push_back(self);
  for (const auto& [id, node] : rejoined_) table_.push_back(node);
  // The nodes' newest map, with its replicas: a server that dies later
  // fails over as it would have under the dead scheduler.
  absl::StatusOr<ReplicaMap> map =
      ReplicaMap::FromControl(recovered_map_, postoffice_->num_servers());
  if (!map.ok()) {
    LOG(WARNING) << "the nodes reported no usable key-range map ("
                 << map.status().message()
                 << "); using the uniform one of --virtual_nodes";
    map = ReplicaMap::Initial(KeyRangeMap::Uniform(postoffice_->num_servers(),
                                                   options_.virtual_nodes)
                                  .value(),
                              ResolvedReplicas())
              .value();
  }
  postoffice_->SetCluster(table_, map->ranges());
  replica_map_ = *std::move(map);
  formed_ = true;
  LOG(INFO) << "recovered the job: " << postoffice_->num_servers()
            << " servers and " << postoffice_->num_workers()
            << " workers rejoined; " << done_workers_.size()
            << " workers had finished";
  for (int group = 1; group <= kAllGroup; ++group) PassBarriers(group);
  MaybeEndTraining();
}

}  // namespace petrel
