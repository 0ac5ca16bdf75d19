// Scheduler: admission. A node joins with the auth token (compared in
// constant time) and, with CURVE on, a key whose roles allow its role; the
// cluster forms once every expected node joined, with ids and ranks in a
// deterministic order (requested rank, else join order). A server joining
// the formed job goes to the MembershipController (a replacement or an
// added server). Recovery: a scheduler restarted with --recover
// (SchedulerOptions::recover) rebuilds the node table from the nodes that
// rejoin with their ids (Postoffice::SendRejoin), and any scheduler
// acknowledges a rejoin of a node it knows (it only missed the node's
// heartbeats).
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

#include "base/out_of_job.h"
#include "base/secret_compare.h"
#include "scheduler/scheduler.h"
#include "security/authorized_keys.h"

namespace petrel {

// With CURVE on: whether the key the joining connection authenticated with
// may take the role the node asks for (the authorized-keys file's roles).
absl::Status Scheduler::CheckJoinKey(const pb::Node& node,
                                     const PeerAuth& peer) {
  const uint32_t wanted =
      node.role() == pb::ROLE_SERVER ? kKeyRoleServer : kKeyRoleWorker;
  absl::StatusOr<uint32_t> roles = ParseKeyRoles(peer.roles);
  if (peer.public_key.empty() || !roles.ok()) {
    return absl::PermissionDeniedError(
        "the connection has no authenticated CURVE key");
  }
  if ((*roles & wanted) == 0) {
    return absl::PermissionDeniedError(absl::StrCat(
        "key ", peer.public_key, " may join as ", peer.roles, ", not as ",
        RoleName(node.role()), " (see the authorized-keys file)"));
  }
  return absl::OkStatus();
}

absl::Status Scheduler::CheckClusterSize(const pb::Node& node) const {
  struct Count {
    int given;
    int mine;
    const char* flag;
    const char* variable;
  };
  for (const Count& c : {Count{node.num_servers(), postoffice_->num_servers(),
                               "num_servers", "DMLC_NUM_SERVER"},
                         Count{node.num_workers(), postoffice_->num_workers(),
                               "num_workers", "DMLC_NUM_WORKER"}}) {
    if (c.given != 0 && c.given != c.mine) {
      return absl::InvalidArgumentError(absl::StrCat(
          "this node has ", c.flag, "=", c.given, " but the scheduler ", c.flag,
          "=", c.mine, " (give every node the same --", c.flag, " or ",
          c.variable, ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status Scheduler::CheckJoin(const pb::Node& node) {
  if (node.role() != pb::ROLE_SERVER && node.role() != pb::ROLE_WORKER) {
    return absl::InvalidArgumentError("only servers and workers may join");
  }
  if (formed_) {
    absl::StatusOr<int> rank = membership_.JoinRank(node);
    return rank.ok() ? absl::OkStatus() : rank.status();
  }
  if (options_.recover) {
    return absl::FailedPreconditionError(
        "this scheduler recovers a running job (--recover): only the job's "
        "nodes may rejoin, with their ids");
  }
  int expected = node.role() == pb::ROLE_SERVER ? postoffice_->num_servers()
                                                : postoffice_->num_workers();
  int count = 0;
  for (const pb::Node& n : pending_) {
    if (n.role() != node.role()) continue;
    ++count;
    if (node.requested_rank() >= 0 &&
        n.requested_rank() == node.requested_rank()) {
      return absl::AlreadyExistsError(
          absl::StrCat(RoleName(node.role()), " rank ", node.requested_rank(),
                       " is already taken by the node at ", Where(n)));
    }
  }
  if (count >= expected) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the job expects ", expected, " ", RoleName(node.role()),
                     "s and all have joined"));
  }
  if (node.requested_rank() >= expected) {
    return absl::InvalidArgumentError(absl::StrCat(
        "rank ", node.requested_rank(), " requested but the job has ", expected,
        " ", RoleName(node.role()), "s"));
  }
  return absl::OkStatus();
}

void Scheduler::HandleJoin(const Message& msg) {
  const pb::Control& control = msg.meta.control();
  if (control.nodes_size() != 1) return;
  pb::Node node = control.nodes(0);
  if (node.id() != kEmptyNodeId) {
    HandleRejoin(msg);
    return;
  }
  const bool curve = postoffice_->van()->options().curve.enabled();
  // Peers reach the node with the key it authenticated with, never one it
  // merely declared.
  node.set_curve_public_key(curve ? msg.peer.public_key : "");
  for (size_t i = 0; i < pending_.size(); ++i) {
    if (pending_[i].transport_id() == node.transport_id()) return;  // resent
  }
  for (const pb::Node& n : table_) {
    if (formed_ && n.transport_id() == node.transport_id()) return;  // ditto
  }
  if (!SecretsEqual(control.auth_token(), options_.auth_token)) {
    // No answer and no connection back: a REJECT would mean connecting to
    // the sender, which shows it this scheduler's transport identity, the
    // one thing it needs to speak as the scheduler to the other nodes.
    postoffice_->van()->CountDrop(
        "unauthenticated",
        absl::StrCat("join with a wrong auth token from ", Where(node)));
    return;
  }
  // A route to the joining node for the reply (no identity bound yet).
  pb::Node route = node;
  route.set_id(PendingRoute(pending_.size()));
  route.clear_transport_id();
  postoffice_->van()->Connect(route);
  pb::Control reply;
  // Every reply to a node without an id names it (its transport identity,
  // which only this scheduler was told): the node ignores replies that do
  // not, so a stranger cannot refuse or answer its join.
  *reply.add_nodes() = node;
  absl::Status s = curve ? CheckJoinKey(node, msg.peer) : absl::OkStatus();
  if (s.ok()) s = CheckJoin(node);
  // After the token check: only a member of the job learns its size.
  const bool bad_config = s.ok() && !(s = CheckClusterSize(node)).ok();
  if (!s.ok()) {
    LOG(WARNING) << "refused " << RoleName(node.role()) << " from "
                 << Where(node) << ": " << s.message();
    reply.set_cmd(pb::COMMAND_REJECT);
    reply.set_reason(std::string(s.message()));
    reply.set_bad_config(bad_config);
    SendControl(route.id(), std::move(reply));
    return;
  }
  if (formed_) {
    membership_.Admit(node, membership_.JoinRank(node).value());
    return;
  }
  LOG(INFO) << RoleName(node.role()) << " from " << Where(node) << " joined";
  postoffice_->van()->AdmitIdentity(node.transport_id());
  pending_.push_back(node);
  reply.set_cmd(pb::COMMAND_ADD_NODE);  // ack: waiting for the others
  SendControl(route.id(), std::move(reply));
  if (static_cast<int>(pending_.size()) ==
      postoffice_->num_servers() + postoffice_->num_workers()) {
    FormCluster();
  }
}

void Scheduler::FormCluster() {
  table_.clear();
  pb::Node self = postoffice_->SelfNode();
  self.set_id(kSchedulerId);
  table_.push_back(self);
  for (pb::Role role : {pb::ROLE_SERVER, pb::ROLE_WORKER}) {
    int n = role == pb::ROLE_SERVER ? postoffice_->num_servers()
                                    : postoffice_->num_workers();
    std::vector<bool> taken(n, false);
    for (const pb::Node& p : pending_) {
      if (p.role() == role && p.requested_rank() >= 0)
        taken[p.requested_rank()] = true;
    }
    int next = 0;
    for (const pb::Node& p : pending_) {  // join order
      if (p.role() != role) continue;
      pb::Node node = p;
      if (p.requested_rank() < 0) {
        while (taken[next]) ++next;
        taken[next] = true;
        node.set_rank(next);
      } else {
        node.set_rank(p.requested_rank());
      }
      node.set_id(role == pb::ROLE_SERVER ? ServerRankToId(node.rank())
                                          : WorkerRankToId(node.rank()));
      table_.push_back(node);
    }
  }
  // Validated at startup: num_servers >= 1, virtual_nodes >= 1.
  KeyRangeMap ranges =
      KeyRangeMap::Uniform(postoffice_->num_servers(), options_.virtual_nodes)
          .value();
  postoffice_->SetCluster(table_, ranges);
  pb::Control reply;
  reply.set_cmd(pb::COMMAND_ADD_NODE);
  for (const pb::Node& n : table_) *reply.add_nodes() = n;
  membership_.SetMap(
      ReplicaMap::Initial(ranges, membership_.ResolvedReplicas()).value());
  membership_.map()->ToControl(&reply);
  absl::Time now = absl::Now();
  for (const pb::Node& n : table_) {
    if (n.id() == kSchedulerId) continue;
    last_seen_[n.id()] = now;
    SendControl(n.id(), reply);
    LOG(INFO) << RoleName(n.role()) << " " << n.rank() << " at " << Where(n)
              << " is node " << n.id();
  }
  formed_ = true;
  LOG(INFO) << "cluster formed: " << postoffice_->num_servers() << " servers, "
            << postoffice_->num_workers() << " workers";
  // The scheduler's own barrier may have come first.
  for (int group = 1; group <= kAllGroup; ++group) PassBarriers(group);
}

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

void Scheduler::RefuseRejoin(const pb::Node& node, const absl::Status& why) {
  LOG_EVERY_T(WARNING, 1.0)
      << "refused the rejoin of node " << node.id() << " from " << node.host()
      << ":" << node.port() << ": " << why.message();
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
  pb::Control reply;
  reply.set_cmd(pb::COMMAND_REJECT);
  reply.set_reason(std::string(why.message()));
  reply.set_out_of_job(IsOutOfJob(why));
  *reply.add_nodes() = node;
  SendControl(node.id(), std::move(reply));
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
  if (absl::Status s = CheckRejoin(node, msg.peer); !s.ok()) {
    RefuseRejoin(node, s);
    return;
  }
  pb::Control reply;
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
                              membership_.ResolvedReplicas())
              .value();
  }
  postoffice_->SetCluster(table_, map->ranges());
  membership_.SetMap(*std::move(map));
  formed_ = true;
  LOG(INFO) << "recovered the job: " << postoffice_->num_servers()
            << " servers and " << postoffice_->num_workers()
            << " workers rejoined; " << done_workers_.size()
            << " workers had finished";
  for (int group = 1; group <= kAllGroup; ++group) PassBarriers(group);
  MaybeEndTraining();
}

}  // namespace petrel
