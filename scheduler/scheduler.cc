// Scheduler: the job's life (admission is in scheduler_join.cc): control
// messages, barriers, the end of training, failure handling (declaring
// nodes dead on missed heartbeats or a lost connection, telling the others,
// failing the job or handing a server's death to the MembershipController),
// and the cluster's status and metrics (petrelctl status, the
// petrel_cluster_* / petrel_scheduler_* gauges).
#include "scheduler/scheduler.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "glog/logging.h"

namespace petrel {
namespace {

const char* RoleLabel(pb::Role role) {
  return role == pb::ROLE_SERVER ? "server" : "worker";
}

constexpr const char* kStates[] = {"alive", "finished", "dead", "lost"};

}  // namespace

int Scheduler::PendingRoute(size_t index) {
  return -static_cast<int>(index) - 1;
}

std::string Scheduler::RoleName(pb::Role role) {
  return role == pb::ROLE_SERVER ? "server" : "worker";
}

std::string Scheduler::Where(const pb::Node& node) {
  return absl::StrCat(node.host(), ":", node.port());
}

Scheduler::Scheduler(Postoffice* postoffice, SchedulerOptions options)
    : postoffice_(postoffice),
      options_(std::move(options)),
      admin_(postoffice, options_.auth_token, AdminHandlers()),
      membership_(postoffice, options_.replicas, this) {
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
    if (membership_.map().has_value()) return membership_.map()->ranges();
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

std::vector<pb::Node>& Scheduler::table() {
  mu_.AssertHeld();
  return table_;
}

void Scheduler::AdmitServer(const pb::Node& node) {
  mu_.AssertHeld();
  for (auto it = dead_.begin(); it != dead_.end(); ++it) {
    if (it->node.id() == node.id()) {
      dead_.erase(it);
      break;
    }
  }
  last_seen_[node.id()] = absl::Now();
  postoffice_->van()->AdmitIdentity(node.transport_id());
  postoffice_->van()->Connect(node);
}

bool Scheduler::WorkerGone(int id) const {
  mu_.AssertHeld();
  return lost_workers_.contains(id) || done_workers_.contains(id);
}

void Scheduler::PassServerBarriers() {
  mu_.AssertHeld();
  for (int group = 1; group <= kAllGroup; ++group) {
    if (group & kServerGroup) PassBarriers(group);
  }
}

AdminChannel::Handlers Scheduler::AdminHandlers() {
  AdminChannel::Handlers h;
  h.status = [this](bool nodes, pb::AdminReply* reply) {
    FillAdminReply(nodes, reply);
  };
  h.checkpoint = [this]() -> absl::Status {
    return admin_actions_.checkpoint
               ? admin_actions_.checkpoint()
               : absl::FailedPreconditionError(
                     "the job has no checkpoint directory");
  };
  h.stop = [this](const std::string& reason) {
    if (admin_actions_.stop) {
      admin_actions_.stop(reason);
    } else {
      Interrupt(reason);
    }
  };
  h.drain = [this](int id) { return RequestDrain(id); };
  return h;
}

void Scheduler::FillAdminReply(bool nodes, pb::AdminReply* reply) const {
  absl::MutexLock lock(&mu_);
  reply->set_num_servers(postoffice_->num_servers());
  reply->set_num_workers(postoffice_->num_workers());
  reply->set_formed(formed_);
  reply->set_job_state(result_.has_value() ? "ending"
                       : formed_           ? "running"
                                           : "forming");
  if (nodes) FillStatus(reply);
}

absl::Status Scheduler::RequestDrain(int id) {
  absl::MutexLock lock(&mu_);
  if (!formed_ || result_.has_value()) {
    return absl::FailedPreconditionError("the job is not running");
  }
  return membership_.RequestDrain(id);
}

void Scheduler::HandleControl(Message&& msg) {
  if (msg.meta.control().cmd() == pb::COMMAND_ADMIN) {
    admin_.Handle(msg);
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
      membership_.HandleCaughtUp(sender, msg.meta.control().map_version());
      break;
    case pb::COMMAND_DRAIN_DONE:
      membership_.HandleDrainDone(sender, msg.meta.control());
      break;
    case pb::COMMAND_HEARTBEAT: {
      if (formed_ && msg.meta.control().has_stats()) {
        RecordStats(sender, msg.meta.control().stats());
      }
      // Answered, so that nodes notice when the scheduler is gone
      // (cluster/scheduler_watch.h).
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

void Scheduler::HandleBarrier(const Message& msg) {
  int group = msg.meta.control().barrier_group();
  uint64_t epoch = msg.meta.control().barrier_epoch();
  std::vector<int> members = LiveMembers(group);
  int sender = msg.meta.sender();
  // Recovering, the barriers the nodes send again wait for the table; the
  // scheduler's own (a group that holds it) waits for the cluster to form.
  if ((!formed_ && !options_.recover && sender != kSchedulerId) ||
      !IsGroupId(group) ||
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
                                        membership_.lost(id);
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
  if (formed_ && !result_.has_value()) membership_.QueryDrain();
  if (!formed_ || result_.has_value() ||
      options_.heartbeat_timeout <= absl::ZeroDuration()) {
    return;
  }
  for (const pb::Node& n : table_) {
    if (n.id() == kSchedulerId || done_workers_.contains(n.id()) ||
        lost_workers_.contains(n.id()) || membership_.drained(n.id())) {
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

void Scheduler::OnConnectionLost(int id, const std::string& reason) {
  absl::MutexLock lock(&mu_);
  // Before the cluster formed nobody depends on the node (a join that went
  // away is caught by the join timeout); after the job ended, nodes leave.
  if (!formed_ || result_.has_value() || id == kSchedulerId ||
      done_workers_.contains(id) || membership_.drained(id)) {
    return;
  }
  for (const pb::Node& n : table_) {
    if (n.id() != id) continue;
    DeclareDead(n, absl::StrCat("died: ", reason),
                last_seen_.contains(id) ? absl::Now() - last_seen_[id]
                                        : absl::ZeroDuration(),
                "connection");
    return;
  }
}

void Scheduler::DeclareDead(const pb::Node& node, const std::string& reason,
                            absl::Duration silent_for,
                            const std::string& cause) {
  for (const DeadNode& d : dead_) {
    if (d.node.id() == node.id()) return;
  }
  const std::string what = absl::StrCat(Describe(node.id()), " ", reason);
  dead_.push_back(DeadNode{node, silent_for, what});
  postoffice_->metrics()
      ->GetCounter("petrel_scheduler_dead_nodes_total",
                   "Nodes declared dead, by cause (heartbeat, connection).",
                   {{"cause", cause}})
      ->Increment();
  LOG(ERROR) << what << "; declared dead";
  postoffice_->van()->MarkPeerDead(node.id());
  // Before any TERMINATE, on the same connections: a node's waits on the
  // dead one fail with this reason rather than the job's.
  pb::Control notice;
  notice.set_cmd(pb::COMMAND_NODE_DEAD);
  *notice.add_nodes() = node;
  notice.set_reason(what);
  const bool failed_over =
      node.role() == pb::ROLE_SERVER && membership_.FailOver(node, &notice);
  SendToLiveNodes(notice, node.id());
  if (failed_over) return;
  // A training worker's death is survived when the job can hand its data to
  // the live workers (worker_recovery); anything else fails the job.
  if (node.role() == pb::ROLE_WORKER && worker_lost_hook_ &&
      worker_lost_hook_(node.id())) {
    LoseWorker(node.id());
    return;
  }
  if (options_.fail_on_dead_node) {
    TerminateAll(true, what);
    result_ = absl::AbortedError(what);
  }
}

bool Scheduler::TellDeadNode(int sender) {
  for (const DeadNode& d : dead_) {
    if (d.node.id() != sender) continue;
    // A node declared dead that speaks again (SIGSTOP then SIGCONT): the
    // job went on without it. It is told so, naming itself, and stops
    // (Postoffice::HandleNodeDead); the others ignore what it sends.
    LOG_EVERY_T(WARNING, 1.0)
        << Describe(sender)
        << " was declared dead and spoke again; told it is out of the job";
    pb::Control notice;
    notice.set_cmd(pb::COMMAND_NODE_DEAD);
    *notice.add_nodes() = d.node;
    notice.set_reason(absl::StrCat(d.reason, "; the job went on without it"));
    SendControl(sender, std::move(notice));
    return true;
  }
  return false;
}

void Scheduler::FillStatus(pb::AdminReply* reply) const {
  const absl::Time now = absl::Now();
  if (!formed_) {
    for (const pb::Node& n : pending_) {
      pb::NodeStatus* s = reply->add_nodes();
      *s->mutable_node() = n;
      s->set_state("joining");
      s->set_heartbeat_age_s(-1);
    }
    return;
  }
  for (const pb::Node& n : table_) {
    if (n.id() == kSchedulerId) continue;
    pb::NodeStatus* s = reply->add_nodes();
    *s->mutable_node() = n;
    const bool dead =
        std::any_of(dead_.begin(), dead_.end(),
                    [&n](const DeadNode& d) { return d.node.id() == n.id(); });
    s->set_state(lost_workers_.contains(n.id())   ? "lost"
                 : membership_.drained(n.id())    ? "drained"
                 : dead                           ? "dead"
                 : done_workers_.contains(n.id()) ? "finished"
                                                  : "alive");
    auto seen = last_seen_.find(n.id());
    s->set_heartbeat_age_s(seen == last_seen_.end()
                               ? -1
                               : absl::ToDoubleSeconds(now - seen->second));
    auto report = reports_.find(n.id());
    if (report != reports_.end()) {
      s->set_requests_per_s(report->second.requests_per_s);
      s->set_requests_total(report->second.stats.requests_total());
      *s->mutable_tables() = report->second.stats.tables();
    }
  }
}

void Scheduler::RecordStats(int sender, const pb::NodeStats& stats) {
  NodeReport& r = reports_[sender];
  const absl::Time now = absl::Now();
  if (r.at != absl::InfinitePast() && now > r.at) {
    const double seconds = absl::ToDoubleSeconds(now - r.at);
    const int64_t delta =
        std::max<int64_t>(0, stats.requests_total() - r.stats.requests_total());
    r.requests_per_s = static_cast<double>(delta) / seconds;
  }
  r.stats = stats;
  r.at = now;
}

void Scheduler::ExportClusterMetrics() {
  MetricsRegistry* metrics = postoffice_->metrics();
  pb::AdminReply status;
  FillStatus(&status);
  for (pb::Role role : {pb::ROLE_SERVER, pb::ROLE_WORKER}) {
    for (const char* state : kStates) {
      int n = 0;
      for (const pb::NodeStatus& s : status.nodes()) {
        if (s.node().role() == role && s.state() == state) ++n;
      }
      metrics
          ->GetGauge("petrel_cluster_nodes",
                     "Nodes of the cluster by role and state (alive, "
                     "finished, dead, lost).",
                     {{"role", RoleLabel(role)}, {"state", state}})
          ->Set(n);
    }
    metrics
        ->GetGauge("petrel_cluster_nodes_expected",
                   "Nodes the job expects, by role.",
                   {{"role", RoleLabel(role)}})
        ->Set(role == pb::ROLE_SERVER ? postoffice_->num_servers()
                                      : postoffice_->num_workers());
  }
  metrics
      ->GetGauge("petrel_cluster_formed",
                 "1 once every expected node joined, else 0.")
      ->Set(formed_ ? 1 : 0);
  // The key-range map is fixed once the cluster formed (servers are not
  // elastic yet): version 1 from then on, 0 before.
  metrics
      ->GetGauge("petrel_cluster_key_range_version",
                 "Version of the key-range map the cluster uses (0: none).")
      ->Set(formed_ ? 1 : 0);
  size_t waiting = 0;
  for (const auto& entry : barriers_) waiting += entry.second.size();
  metrics
      ->GetGauge("petrel_scheduler_barrier_waiting_nodes",
                 "Nodes waiting at a barrier now.")
      ->Set(static_cast<double>(waiting));
  Counter* passed = metrics->GetCounter("petrel_scheduler_barriers_total",
                                        "Barriers passed.");
  if (static_cast<uint64_t>(passed->value()) < barriers_passed_) {
    passed->Increment(static_cast<int64_t>(barriers_passed_) - passed->value());
  }
  metrics->GetCounter("petrel_scheduler_admin_requests_total",
                      "Admin requests (petrelctl), by command and result.",
                      {{"command", "any"}, {"result", "refused"}});
}

}  // namespace petrel
