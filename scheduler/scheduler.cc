#include "scheduler/scheduler.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "glog/logging.h"

#include "base/secret_compare.h"
#include "security/authorized_keys.h"

namespace petrel {
namespace {

// Pending nodes have no id yet; replies to them travel on temporary routes.
int PendingRoute(size_t index) { return -static_cast<int>(index) - 1; }

std::string RoleName(pb::Role role) {
  return role == pb::ROLE_SERVER ? "server" : "worker";
}

std::string Where(const pb::Node& node) {
  return absl::StrCat(node.host(), ":", node.port());
}

}  // namespace

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

Scheduler::Scheduler(Postoffice* postoffice, SchedulerOptions options)
    : postoffice_(postoffice), options_(std::move(options)) {
  postoffice_->set_control_handler(
      [this](Message&& msg) { HandleControl(std::move(msg)); });
  postoffice_->set_tick_hook([this](absl::Time now) { OnTick(now); });
  if (options_.connection_grace > absl::ZeroDuration()) {
    postoffice_->van()->WatchConnections(
        options_.connection_grace, [this](int id, const std::string& reason) {
          OnConnectionLost(id, reason);
        });
  }
}

absl::Status Scheduler::Run() {
  absl::MutexLock lock(&mu_);
  auto formed = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) -> bool {
    return formed_ || result_.has_value();
  };
  if (!mu_.AwaitWithTimeout(absl::Condition(&formed), options_.join_timeout)) {
    std::string missing = DescribeMissing();
    TerminateAll(true, "the cluster did not form in time");
    result_ = absl::DeadlineExceededError(absl::StrCat(
        "the cluster did not form within ",
        absl::FormatDuration(options_.join_timeout), ": ", missing));
    return *result_;
  }
  auto ended = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) -> bool {
    return result_.has_value();
  };
  mu_.Await(absl::Condition(&ended));
  return *result_;
}

void Scheduler::Interrupt(const std::string& reason) {
  absl::MutexLock lock(&mu_);
  if (result_.has_value()) return;
  TerminateAll(true, reason);
  result_ = absl::AbortedError(reason);
}

void Scheduler::EndJob(const absl::Status& result) {
  absl::MutexLock lock(&mu_);
  if (result_.has_value()) return;
  TerminateAll(!result.ok(), std::string(result.message()));
  result_ = result;
}

std::vector<DeadNode> Scheduler::dead_nodes() const {
  absl::MutexLock lock(&mu_);
  return dead_;
}

std::vector<int> Scheduler::live_workers() const {
  absl::MutexLock lock(&mu_);
  // Before the cluster formed no worker has its id yet.
  if (!formed_) return {};
  return LiveMembers(kWorkerGroup);
}

std::vector<int> Scheduler::live_servers() const {
  absl::MutexLock lock(&mu_);
  if (!formed_) return {};
  return LiveMembers(kServerGroup);
}

KeyRangeMap Scheduler::key_ranges() const {
  {
    absl::MutexLock lock(&mu_);
    if (replica_map_.has_value()) return replica_map_->ranges();
  }
  return postoffice_->key_ranges();
}

std::vector<pb::Node> Scheduler::nodes() const {
  absl::MutexLock lock(&mu_);
  return table_;
}

std::string Scheduler::DescribeMissing() const {
  int servers = 0, workers = 0;
  std::vector<std::string> joined;
  std::vector<pb::Node> arrived = pending_;
  for (const auto& [id, n] : rejoined_) arrived.push_back(n);
  for (const pb::Node& n : arrived) {
    (n.role() == pb::ROLE_SERVER ? servers : workers)++;
    joined.push_back(absl::StrCat(RoleName(n.role()), " from ", Where(n)));
  }
  return absl::StrCat("missing ", postoffice_->num_servers() - servers, " of ",
                      postoffice_->num_servers(), " servers and ",
                      postoffice_->num_workers() - workers, " of ",
                      postoffice_->num_workers(), " workers; joined: ",
                      joined.empty() ? "nobody" : absl::StrJoin(joined, ", "),
                      servers < postoffice_->num_servers()
                          ? " (a server joins once it has built its tables; "
                            "its log says how far it got)"
                          : "");
}

std::string Scheduler::Describe(int id) const {
  for (const pb::Node& n : table_) {
    if (n.id() == id) {
      return absl::StrCat("node ", id, " (", RoleName(n.role()), " ", n.rank(),
                          " at ", Where(n), ")");
    }
  }
  return absl::StrCat("node ", id);
}

void Scheduler::SendControl(int recipient, pb::Control control) {
  Message msg;
  msg.meta.set_recipient(recipient);
  msg.meta.set_request(false);
  *msg.meta.mutable_control() = std::move(control);
  absl::Status s = postoffice_->Send(std::move(msg));
  if (!s.ok()) LOG(WARNING) << "control to node " << recipient << ": " << s;
}

bool Scheduler::IsDead(int id) const {
  for (const DeadNode& d : dead_) {
    if (d.node.id() == id) return true;
  }
  return false;
}

void Scheduler::SendToLiveNodes(const pb::Control& control, int except) {
  for (const pb::Node& n : table_) {
    if (n.id() == kSchedulerId || n.id() == except || IsDead(n.id())) continue;
    SendControl(n.id(), control);
  }
}

pb::Control Scheduler::NodeBackWithMap(int id) const {
  pb::Control back;
  back.set_cmd(pb::COMMAND_NODE_BACK);
  for (const pb::Node& n : table_) {
    if (n.id() == id) *back.add_nodes() = n;
  }
  replica_map_->ToControl(&back);
  return back;
}

void Scheduler::SetMapVersionGauge() {
  postoffice_->metrics()
      ->GetGauge("petrel_key_range_map_version",
                 "Version of the key-range map this node routes by (bumped "
                 "by each change: a failover, a replacement, an added or a "
                 "drained server).")
      ->Set(static_cast<double>(replica_map_->version()));
}

void Scheduler::HandleControl(Message&& msg) {
  if (msg.meta.control().cmd() == pb::COMMAND_ADMIN) {
    HandleAdmin(msg);
    return;
  }
  absl::MutexLock lock(&mu_);
  int sender = msg.meta.sender();
  if (msg.meta.control().cmd() != pb::COMMAND_ADD_NODE &&
      TellDeadNode(sender)) {
    return;
  }
  if (sender != kEmptyNodeId) last_seen_[sender] = absl::Now();
  switch (msg.meta.control().cmd()) {
    case pb::COMMAND_ADD_NODE:
      HandleJoin(msg);
      break;
    case pb::COMMAND_BARRIER:
      HandleBarrier(msg);
      break;
    case pb::COMMAND_WORKER_DONE:
      HandleWorkerDone(sender);
      break;
    case pb::COMMAND_CAUGHT_UP:
      // A server that copied for a drain is answered at once; a
      // replacement's or an added server's CAUGHT_UP is checked against
      // the map its copies were made by.
      if (HandleDrainCaughtUp(sender)) {
        AnswerCaughtUp(sender, "");
      } else {
        HandleCaughtUp(sender, msg.meta.control().map_version());
      }
      break;
    case pb::COMMAND_DRAIN_DONE:
      HandleDrainDone(sender, msg.meta.control());
      break;
    case pb::COMMAND_HEARTBEAT: {
      if (formed_ && msg.meta.control().has_stats()) {
        RecordStats(sender, msg.meta.control().stats());
      }
      // Answered, so that nodes notice when the scheduler is gone
      // (van/scheduler_watch.h).
      pb::Control reply;
      reply.set_cmd(pb::COMMAND_HEARTBEAT);
      SendControl(sender, std::move(reply));
      break;
    }
    default:
      LOG_EVERY_T(WARNING, 1.0) << "scheduler ignores control "
                                << pb::Command_Name(msg.meta.control().cmd())
                                << " from node " << sender;
  }
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
    absl::StatusOr<int> rank = ReplacementRank(node);
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
    AdmitReplacement(node, ReplacementRank(node).value());
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
  replica_map_ = ReplicaMap::Initial(ranges, ResolvedReplicas()).value();
  replica_map_->ToControl(&reply);
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
}

void Scheduler::HandleBarrier(const Message& msg) {
  int group = msg.meta.control().barrier_group();
  uint64_t epoch = msg.meta.control().barrier_epoch();
  std::vector<int> members = LiveMembers(group);
  int sender = msg.meta.sender();
  // Recovering, the barriers the nodes send again wait for the table.
  if ((!formed_ && !options_.recover) || !IsGroupId(group) ||
      std::find(members.begin(), members.end(), sender) == members.end()) {
    LOG_EVERY_T(WARNING, 1.0)
        << "ignoring barrier of group " << group << " from node " << sender;
    return;
  }
  barriers_[{group, epoch}].insert(sender);
  if (formed_) PassBarriers(group);
}

std::vector<int> Scheduler::LiveMembers(int group) const {
  std::vector<int> members = postoffice_->GetNodeIds(group);
  members.erase(std::remove_if(members.begin(), members.end(),
                               [this](int id) ABSL_NO_THREAD_SAFETY_ANALYSIS {
                                 return lost_workers_.contains(id) ||
                                        lost_servers_.contains(id);
                               }),
                members.end());
  return members;
}

void Scheduler::PassBarriers(int group) {
  const std::vector<int> members = LiveMembers(group);
  for (auto it = barriers_.begin(); it != barriers_.end();) {
    // Not a structured binding: C++17 lambdas cannot capture one (clang).
    const auto& key = it->first;
    const auto& arrived = it->second;
    bool all = key.first == group &&
               std::all_of(members.begin(), members.end(),
                           [&](int id) { return arrived.contains(id); });
    if (!all) {
      ++it;
      continue;
    }
    VLOG(1) << "barrier of group " << group << " epoch " << key.second
            << " passed";
    pb::Control reply;
    reply.set_cmd(pb::COMMAND_BARRIER);
    reply.set_barrier_group(group);
    reply.set_barrier_epoch(key.second);
    for (int id : members) SendControl(id, reply);
    ++barriers_passed_;
    it = barriers_.erase(it);
    if (barrier_passed_hook_) barrier_passed_hook_(group);
  }
}

void Scheduler::HandleWorkerDone(int sender) {
  if ((!formed_ && !options_.recover) || !IsWorkerId(sender)) return;
  done_workers_.insert(sender);
  LOG(INFO) << Describe(sender) << " finished (" << done_workers_.size()
            << " of " << postoffice_->num_workers() - lost_workers_.size()
            << (lost_workers_.empty() ? "" : " live") << ")";
  MaybeEndTraining();
}

void Scheduler::MaybeEndTraining() {
  if (!formed_ ||
      static_cast<int>(done_workers_.size() + lost_workers_.size()) <
          postoffice_->num_workers() ||
      result_.has_value()) {
    return;
  }
  if (workers_done_hook_) {
    workers_done_hook_();
    return;
  }
  TerminateAll(false, "");
  result_ = absl::OkStatus();
}

void Scheduler::LoseWorker(int id) {
  lost_workers_.insert(id);
  LOG(WARNING) << "the job goes on without " << Describe(id) << " ("
               << postoffice_->num_workers() - lost_workers_.size()
               << " workers left)";
  for (int group = 1; group <= kAllGroup; ++group) {
    if (group & kWorkerGroup) PassBarriers(group);
  }
  MaybeEndTraining();
}

void Scheduler::TerminateAll(bool failed, const std::string& reason) {
  pb::Control control;
  control.set_cmd(pb::COMMAND_TERMINATE);
  control.set_failed(failed);
  control.set_reason(reason);
  if (formed_) {
    for (const pb::Node& n : table_) {
      if (n.id() != kSchedulerId) SendControl(n.id(), control);
    }
  } else {
    for (size_t i = 0; i < pending_.size(); ++i) {
      // Names the node, as every reply to a node without an id must.
      pb::Control to_pending = control;
      *to_pending.add_nodes() = pending_[i];
      SendControl(PendingRoute(i), std::move(to_pending));
    }
    for (const auto& [id, node] : rejoined_) SendControl(id, control);
  }
  LOG(INFO) << "terminating the job" << (failed ? ": " + reason : "");
}

void Scheduler::OnTick(absl::Time now) {
  absl::MutexLock lock(&mu_);
  ExportClusterMetrics();
  if (formed_ && !result_.has_value()) QueryDrain();
  if (!formed_ || result_.has_value() ||
      options_.heartbeat_timeout <= absl::ZeroDuration()) {
    return;
  }
  for (const pb::Node& n : table_) {
    if (n.id() == kSchedulerId || done_workers_.contains(n.id()) ||
        lost_workers_.contains(n.id()) || drained_.contains(n.id())) {
      continue;
    }
    absl::Duration silent = now - last_seen_[n.id()];
    if (silent < options_.heartbeat_timeout) continue;
    DeclareDead(
        n, absl::StrCat("sent no heartbeat for ", absl::FormatDuration(silent)),
        silent, "heartbeat");
    if (result_.has_value()) return;
  }
}

}  // namespace petrel
