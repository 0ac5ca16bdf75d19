#include "cluster/postoffice.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

#include "base/net_util.h"
#include "base/out_of_job.h"
#include "base/status_macros.h"
#include "cluster/customer.h"

namespace petrel {
namespace {

uint64_t CustomerKey(int app_id, int customer_id) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(app_id)) << 32) |
         static_cast<uint32_t>(customer_id);
}

std::string RoleName(pb::Role role) {
  switch (role) {
    case pb::ROLE_SCHEDULER:
      return "scheduler";
    case pb::ROLE_SERVER:
      return "server";
    case pb::ROLE_WORKER:
      return "worker";
    default:
      return "node";
  }
}

}  // namespace

Postoffice::Postoffice(PostofficeOptions options, std::unique_ptr<Van> van,
                       MetricsRegistry* metrics)
    : options_(std::move(options)),
      van_(std::move(van)),
      metrics_(metrics),
      map_hold_(metrics),
      scheduler_watch_(
          SchedulerWatchOptions{
              std::max(3 * options_.heartbeat_interval, absl::Seconds(1)),
              options_.scheduler_grace, options_.heartbeat_interval},
          absl::Now()) {
  absl::MutexLock lock(&mu_);
  advertise_host_ = options_.advertise_host;
  num_servers_ = options_.num_servers;
  num_workers_ = options_.num_workers;
}

Postoffice::~Postoffice() { Stop(); }

std::string Postoffice::advertise_host() const {
  absl::MutexLock lock(&mu_);
  return advertise_host_;
}

int Postoffice::num_servers() const {
  absl::MutexLock lock(&mu_);
  return num_servers_;
}

int Postoffice::num_workers() const {
  absl::MutexLock lock(&mu_);
  return num_workers_;
}

int Postoffice::my_rank() const {
  absl::MutexLock lock(&mu_);
  return my_rank_;
}

absl::Status Postoffice::ResolveAdvertiseHost() {
  absl::MutexLock lock(&mu_);
  if (!advertise_host_.empty()) return absl::OkStatus();
  if (is_scheduler()) {
    advertise_host_ = van_->options().bind_host == "0.0.0.0"
                          ? "127.0.0.1"
                          : van_->options().bind_host;
    return absl::OkStatus();
  }
  PETREL_ASSIGN_OR_RETURN(advertise_host_,
                          LocalAddressTowards(options_.scheduler_host));
  return absl::OkStatus();
}

pb::Node Postoffice::SelfNode() const {
  pb::Node node;
  node.set_role(options_.role);
  node.set_id(my_id());
  node.set_host(advertise_host());
  node.set_port(options_.advertise_port > 0 ? options_.advertise_port
                                            : van_->port());
  node.set_requested_rank(options_.requested_rank);
  node.set_add_server(options_.add_server);
  node.set_transport_id(van_->transport_id());
  if (options_.num_servers_given) node.set_num_servers(options_.num_servers);
  if (options_.num_workers_given) node.set_num_workers(options_.num_workers);
  return node;
}

absl::Status Postoffice::Start() {
  PETREL_RETURN_IF_ERROR(ResolveAdvertiseHost());
  van_->set_is_scheduler(is_scheduler());
  // Servers and the scheduler serve requests at any time.
  van_->set_serves_requests(!is_worker());
  if (is_scheduler()) van_->set_my_id(kSchedulerId);
  PETREL_RETURN_IF_ERROR(
      van_->Start([this](Message&& msg) { HandleMessage(std::move(msg)); },
                  [this] { OnTick(); }));
  started_ = true;
  LOG(INFO) << RoleName(options_.role) << " bound port " << van_->port()
            << ", advertised as " << advertise_host() << ":"
            << SelfNode().port();
  if (is_scheduler()) return absl::OkStatus();
  return Join();
}

void Postoffice::Stop() {
  if (!started_) return;
  started_ = false;
  bool failed;
  {
    absl::MutexLock lock(&mu_);
    failed = abandoned_.has_value() ||
             (terminated_.has_value() && !terminated_->ok());
  }
  // Here too: a waiter woken by the job's failure may stop the van before
  // the thread that failed the job got to AbandonRequests.
  if (failed) van_->ShortenLingerAtStop();
  local_.Stop();
  van_->Stop();
  // A thread still waiting (e.g. a signal's stop request) would wait out
  // its timeout: nothing can arrive any more.
  AbandonRequests(absl::AbortedError("the node stopped"));
}

Message Postoffice::JoinRequest() const {
  Message msg;
  msg.meta.set_recipient(kSchedulerId);
  msg.meta.set_request(true);
  pb::Control* control = msg.meta.mutable_control();
  control->set_cmd(pb::COMMAND_ADD_NODE);
  control->set_auth_token(options_.auth_token);
  *control->add_nodes() = SelfNode();
  return msg;
}

absl::Status Postoffice::Join() {
  pb::Node scheduler;
  scheduler.set_role(pb::ROLE_SCHEDULER);
  scheduler.set_id(kSchedulerId);
  scheduler.set_host(options_.scheduler_host);
  scheduler.set_port(options_.scheduler_port);
  van_->Connect(scheduler);
  PETREL_RETURN_IF_ERROR(van_->Send(JoinRequest()));

  std::string address =
      absl::StrCat(options_.scheduler_host, ":", options_.scheduler_port);
  absl::MutexLock lock(&mu_);
  auto done = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) -> bool {
    return joined_ || join_error_.has_value() || terminated_.has_value();
  };
  if (!mu_.AwaitWithTimeout(absl::Condition(&done), options_.join_timeout)) {
    if (join_acked_) {
      return absl::DeadlineExceededError(absl::StrCat(
          "the scheduler at ", address, " did not complete the cluster within ",
          absl::FormatDuration(options_.join_timeout),
          " (other nodes are missing; see the scheduler's log)"));
    }
    return absl::DeadlineExceededError(
        absl::StrCat("no answer from the scheduler at ", address, " within ",
                     absl::FormatDuration(options_.join_timeout),
                     "; is it running and reachable from here, and does "
                     "--auth_token match the scheduler's? (a join with a "
                     "wrong token gets no answer)"));
  }
  if (join_error_.has_value()) return *join_error_;
  if (terminated_.has_value() && !joined_) return *terminated_;
  LOG(INFO) << RoleName(options_.role) << " joined as node " << my_id()
            << " rank " << my_rank_;
  return absl::OkStatus();
}

void Postoffice::SetCluster(const std::vector<pb::Node>& nodes,
                            const KeyRangeMap& ranges) {
  for (const pb::Node& node : nodes) van_->Connect(node);
  absl::MutexLock lock(&mu_);
  nodes_ = nodes;
  ranges_ = ranges;
  joined_ = true;
  if (is_scheduler()) my_rank_ = 0;
}

std::vector<pb::Node> Postoffice::nodes() const {
  absl::MutexLock lock(&mu_);
  return nodes_;
}

ReplicaMap Postoffice::replica_map() const {
  absl::MutexLock lock(&mu_);
  CHECK(ranges_.has_value()) << "replica_map() before the node joined";
  if (replica_map_.has_value()) return *replica_map_;
  return ReplicaMap::Initial(*ranges_, 1).value();
}

KeyRangeMap Postoffice::key_ranges() const {
  absl::MutexLock lock(&mu_);
  CHECK(ranges_.has_value()) << "key_ranges() before the node joined";
  return *ranges_;
}

std::vector<int> Postoffice::GetNodeIds(int id) const {
  if (!IsGroupId(id)) return {id};
  std::vector<int> ids;
  if (id & kSchedulerGroup) ids.push_back(kSchedulerId);
  const int num_servers = this->num_servers();
  const int num_workers = this->num_workers();
  for (int r = 0; (id & kServerGroup) && r < num_servers; ++r) {
    ids.push_back(ServerRankToId(r));
  }
  for (int r = 0; (id & kWorkerGroup) && r < num_workers; ++r) {
    ids.push_back(WorkerRankToId(r));
  }
  return ids;
}

absl::Status Postoffice::Send(Message msg) {
  msg.meta.set_sender(my_id());
  // No connection carries a message to this node itself.
  if (msg.meta.recipient() == msg.meta.sender() &&
      msg.meta.sender() != kEmptyNodeId) {
    return local_.Post(std::move(msg));
  }
  return van_->Send(std::move(msg));
}

absl::Status Postoffice::AddCustomer(Customer* customer,
                                     bool handles_requests) {
  absl::MutexLock lock(&mu_);
  uint64_t key = CustomerKey(customer->app_id(), customer->customer_id());
  if (customers_.contains(key) ||
      (handles_requests && request_handlers_.contains(customer->app_id()))) {
    return absl::AlreadyExistsError(absl::StrCat(
        "app ", customer->app_id(), " customer ", customer->customer_id(),
        handles_requests ? " (or a request handler of the app)" : "",
        " is already registered"));
  }
  customers_[key] = customer;
  if (handles_requests) request_handlers_[customer->app_id()] = customer;
  return absl::OkStatus();
}

void Postoffice::RemoveCustomer(Customer* customer) {
  // Waits for a call into `customer` on the van thread to return, so the
  // caller may destroy it afterwards.
  absl::MutexLock dispatch(&dispatch_mu_);
  absl::MutexLock lock(&mu_);
  customers_.erase(CustomerKey(customer->app_id(), customer->customer_id()));
  auto it = request_handlers_.find(customer->app_id());
  if (it != request_handlers_.end() && it->second == customer) {
    request_handlers_.erase(it);
  }
}

void Postoffice::HandleMessage(Message&& msg) {
  if (msg.meta.has_control()) {
    const CurveOptions& curve = van_->options().curve;
    if (!is_scheduler() && curve.enabled() &&
        msg.peer.public_key != curve.scheduler_public_key) {
      // Only the scheduler controls a node: with CURVE, a control message
      // must come over a connection holding the scheduler's key.
      van_->CountDrop(
          "control_not_from_scheduler_key",
          absl::StrCat("control message from key ", msg.peer.public_key));
      return;
    }
    HandleControl(std::move(msg));
    ReleaseHeldRequests(absl::Now());  // a map may have come
    return;
  }
  if (HoldIfAheadOfMap(msg, absl::Now())) return;
  DispatchData(std::move(msg));
}

void Postoffice::DispatchData(Message&& msg) {
  absl::MutexLock dispatch(&dispatch_mu_);
  Customer* customer = nullptr;
  {
    absl::MutexLock lock(&mu_);
    // Fencing: a node the scheduler declared dead is out of the job, even
    // if it comes back (SIGSTOP then SIGCONT). Its requests, forwards and
    // answers are ignored: its key ranges failed over, and what it still
    // sends predates the new map (docs/failures.md, "A server that comes
    // back").
    if (any_dead_.load(std::memory_order_acquire) &&
        dead_.contains(msg.meta.sender())) {
      van_->CountDrop("from_dead_node",
                      absl::StrCat("message from node ", msg.meta.sender(),
                                   ", declared dead"));
      return;
    }
    // A request goes to its app's handler whichever customer of the sender
    // sent it; a response goes back to the customer that asked.
    if (msg.meta.request()) {
      auto it = request_handlers_.find(msg.meta.app_id());
      if (it != request_handlers_.end()) customer = it->second;
    } else {
      auto it = customers_.find(
          CustomerKey(msg.meta.app_id(), msg.meta.customer_id()));
      if (it != customers_.end()) customer = it->second;
    }
  }
  if (customer == nullptr) {
    metrics_
        ->GetCounter("petrel_van_messages_rejected_total",
                     "Messages dropped, by reason.",
                     {{"reason", "unknown_customer"}})
        ->Increment();
    LOG_EVERY_T(WARNING, 1.0)
        << "node " << my_id() << " dropped a message for unknown app "
        << msg.meta.app_id() << " customer " << msg.meta.customer_id()
        << " from node " << msg.meta.sender();
    return;
  }
  customer->Accept(std::move(msg));
}

void Postoffice::HandleControl(Message&& msg) {
  const pb::Control& control = msg.meta.control();
  if (msg.meta.request() && control_handler_) {
    control_handler_(std::move(msg));
    return;
  }
  if (msg.meta.sender() != kSchedulerId) {
    // Control messages (TERMINATE, BARRIER releases, node tables, REJECT,
    // NODE_DEAD) are obeyed from the scheduler's connection only (the van
    // checked that the sender id is the connection's).
    metrics_
        ->GetCounter("petrel_van_messages_rejected_total",
                     "Messages dropped, by reason.",
                     {{"reason", "control_not_from_scheduler"}})
        ->Increment();
    LOG_EVERY_T(WARNING, 1.0)
        << "ignoring control " << pb::Command_Name(control.cmd())
        << " from node " << msg.meta.sender();
    return;
  }
  bool joined;
  {
    absl::MutexLock lock(&mu_);
    scheduler_watch_.Heard(absl::Now());
    joined = joined_;
  }
  switch (control.cmd()) {
    case pb::COMMAND_ADD_NODE:
      if (joined) {
        HandleRejoinReply(control);
      } else {
        HandleJoinReply(control);
      }
      break;
    case pb::COMMAND_REJECT:
      if (joined) {
        HandleRejoinRefused(control);
      } else {
        HandleJoinRefused(control);
      }
      break;
    case pb::COMMAND_BARRIER: {
      absl::MutexLock lock(&mu_);
      uint64_t& done = barrier_done_[control.barrier_group()];
      done = std::max(done, control.barrier_epoch());
      break;
    }
    case pb::COMMAND_TERMINATE:
      if (!control.failed() && !control.reason().empty()) {
        LOG(WARNING) << "node " << my_id() << ": " << control.reason();
      }
      Terminate(control.failed() ? absl::AbortedError(absl::StrCat(
                                       "the job failed: ", control.reason()))
                                 : absl::OkStatus());
      break;
    case pb::COMMAND_NODE_DEAD:
      HandleNodeDead(control);
      break;
    case pb::COMMAND_NODE_BACK:
      HandleNodeBack(control);
      break;
    case pb::COMMAND_CAUGHT_UP:  // the answer to this node's CAUGHT_UP
      HandleCaughtUpAnswer(control);
      break;
    case pb::COMMAND_DRAIN_COPY:
      HandleDrainCopy(control);
      break;
    case pb::COMMAND_DRAIN_QUERY:
      HandleDrainQuery(control);
      break;
    case pb::COMMAND_HEARTBEAT:  // the answer to a heartbeat: heard above
      break;
    default:
      break;
  }
}

absl::Status Postoffice::CheckAlive(const std::vector<int>& ids) const {
  if (!any_dead_.load(std::memory_order_acquire)) return absl::OkStatus();
  absl::MutexLock lock(&mu_);
  // A node declared dead is named whatever came after its NODE_DEAD (the
  // failed job's TERMINATE follows it at once): the error a caller sees
  // must not depend on which of the two it raced (docs/failures.md).
  for (int id : ids) {
    auto it = dead_.find(id);
    if (it != dead_.end()) return it->second;
  }
  if (abandoned_.has_value() && !ids.empty()) return *abandoned_;
  return absl::OkStatus();
}

void Postoffice::ForEachCustomer(const std::function<void(Customer*)>& fail) {
  absl::MutexLock dispatch(&dispatch_mu_);
  std::vector<Customer*> customers;
  {
    absl::MutexLock lock(&mu_);
    for (auto& [key, c] : customers_) customers.push_back(c);
  }
  for (Customer* c : customers) fail(c);
}

void Postoffice::AbandonRequests(const absl::Status& status) {
  {
    absl::MutexLock lock(&mu_);
    if (abandoned_.has_value()) return;
    abandoned_ = status;
    any_dead_.store(true, std::memory_order_release);
  }
  van_->ShortenLingerAtStop();
  size_t abandoned = 0;
  ForEachCustomer([&](Customer* c) { abandoned += c->FailAll(status); });
  if (abandoned > 0) {
    LOG(WARNING) << RoleName(options_.role) << " " << my_id() << ": abandoned "
                 << abandoned << " pending request(s) and their resends: "
                 << status.message();
  }
}

void Postoffice::HandleNodeDead(const pb::Control& control) {
  if (control.nodes_size() != 1) return;
  const int id = control.nodes(0).id();
  const absl::Status status = absl::UnavailableError(control.reason());
  if (id == my_id()) {
    // This node was declared dead (it hung past the heartbeat timeout and
    // came back): the job went on without it, so it stops.
    const std::string line = absl::StrCat(
        "this node was declared dead and is out of the job: ", control.reason(),
        "; stopping");
    LOG(ERROR) << line;
    van_->MarkPeerDead(kSchedulerId);
    Terminate(OutOfJobError(line));
    return;
  }
  {
    absl::MutexLock lock(&mu_);
    if (dead_.contains(id)) return;
  }
  // The new map first: a request sliced before it finds the node dead only
  // after the map moved on, and slices again (KVWorker::Send).
  const bool failed_over =
      control.successor() != 0 && InstallFailoverMap(id, control);
  {
    absl::MutexLock lock(&mu_);
    if (!dead_.emplace(id, status).second) return;
    any_dead_.store(true, std::memory_order_release);
  }
  van_->MarkPeerDead(id);
  LOG(WARNING) << RoleName(options_.role) << " " << my_id()
               << ": the scheduler declared " << control.reason();
  if (failed_over) {
    const int successor = control.successor();
    ForEachCustomer([&](Customer* c) { c->FailOver(id, successor, status); });
    return;
  }
  ForEachCustomer([&](Customer* c) { c->FailRequestsTo(id, status); });
}

void Postoffice::HandleJoinRefused(const pb::Control& control) {
  absl::MutexLock lock(&mu_);
  std::string reason =
      absl::StrCat("the scheduler refused this node: ", control.reason());
  // The node's own settings are wrong: as a bad flag (exit 2).
  join_error_ = control.bad_config()
                    ? absl::InvalidArgumentError(std::move(reason))
                    : absl::PermissionDeniedError(std::move(reason));
}

void Postoffice::HandleJoinReply(const pb::Control& control) {
  // The acknowledgement names only this node and has no key ranges.
  if (control.ranges_size() == 0 && control.nodes_size() <= 1) {
    absl::MutexLock lock(&mu_);
    join_acked_ = true;
    return;
  }
  const pb::Node* me = nullptr;
  // The table, not this node's flags, says how many servers and workers the
  // job has: a node started without --num_servers still joins correctly.
  int servers = 0, workers = 0;
  for (const pb::Node& node : control.nodes()) {
    if (node.transport_id() == van_->transport_id()) me = &node;
    if (node.role() == pb::ROLE_SERVER) ++servers;
    if (node.role() == pb::ROLE_WORKER) ++workers;
  }
  absl::StatusOr<ReplicaMap> ranges = ReplicaMap::FromControl(control, servers);
  absl::MutexLock lock(&mu_);
  if (joined_) return;  // a repeated reply
  if (me == nullptr || !ranges.ok()) {
    join_error_ = absl::InvalidArgumentError(
        me == nullptr ? "the node table does not list this node"
                      : std::string(ranges.status().message()));
    return;
  }
  van_->set_my_id(me->id());
  my_rank_ = me->rank();
  num_servers_ = servers;
  num_workers_ = workers;
  nodes_.assign(control.nodes().begin(), control.nodes().end());
  for (pb::Node& node : nodes_) {
    // The scheduler stays at the address this node joined it by: the one it
    // advertises (127.0.0.1 when it binds every interface) need not reach it
    // from another host.
    if (node.id() == kSchedulerId) {
      node.set_host(options_.scheduler_host);
      node.set_port(options_.scheduler_port);
    }
    van_->Connect(node);
  }
  ranges_ = ranges->ranges();
  map_version_.store(ranges->version(), std::memory_order_release);
  replica_map_ = *std::move(ranges);
  joined_as_added_ = control.added_server();
  joined_ = true;
}

void FillNodeStats(const MetricsRegistry& metrics, pb::NodeStats* stats) {
  int64_t requests = 0;
  for (const char* name :
       {"petrel_server_request_seconds", "petrel_worker_request_seconds"}) {
    for (const char* op : {"push", "pull", "push_pull"}) {
      requests +=
          static_cast<int64_t>(metrics.Value(name, {{"op", op}}).value_or(0));
    }
  }
  stats->set_requests_total(requests);
  for (const auto& [labels, rows] : metrics.Series("petrel_table_keys")) {
    pb::TableStats* t = stats->add_tables();
    t->set_table(labels.empty() ? "" : labels[0].second);
    t->set_rows(static_cast<int64_t>(rows));
    t->set_memory_bytes(static_cast<int64_t>(
        metrics.Value("petrel_table_memory_bytes", labels).value_or(0)));
  }
}

void Postoffice::OnTick() {
  absl::Time now = absl::Now();
  if (tick_hook_) tick_hook_(now);
  std::vector<Customer*> customers;
  bool send_heartbeat = false;
  SchedulerWatch::Action watch = SchedulerWatch::Action::kNone;
  {
    absl::MutexLock dispatch(&dispatch_mu_);
    {
      absl::MutexLock lock(&mu_);
      for (auto& [key, c] : customers_) customers.push_back(c);
      const bool beating = joined_ && !is_scheduler() &&
                           options_.heartbeat_interval > absl::ZeroDuration();
      if (beating && !terminated_.has_value()) {
        watch = scheduler_watch_.Tick(now);
      }
      // A lost scheduler gets rejoins instead (OnSchedulerWatch).
      send_heartbeat = beating && !scheduler_watch_.lost() &&
                       now - last_heartbeat_ >= options_.heartbeat_interval;
    }
    for (Customer* c : customers) c->Tick(now);
  }
  ReleaseHeldRequests(now);
  if (watch != SchedulerWatch::Action::kNone) OnSchedulerWatch(watch, now);
  if (send_heartbeat) {
    last_heartbeat_ = now;
    Message msg;
    msg.meta.set_recipient(kSchedulerId);
    msg.meta.set_request(true);
    msg.meta.mutable_control()->set_cmd(pb::COMMAND_HEARTBEAT);
    FillNodeStats(*metrics_, msg.meta.mutable_control()->mutable_stats());
    Send(std::move(msg)).IgnoreError();
  }
}

absl::Status Postoffice::Barrier(int group, absl::Duration timeout) {
  uint64_t epoch;
  {
    absl::MutexLock lock(&mu_);
    epoch = ++barrier_sent_[group];
  }
  Message msg;
  msg.meta.set_recipient(kSchedulerId);
  msg.meta.set_request(true);
  msg.meta.mutable_control()->set_cmd(pb::COMMAND_BARRIER);
  msg.meta.mutable_control()->set_barrier_group(group);
  msg.meta.mutable_control()->set_barrier_epoch(epoch);
  PETREL_RETURN_IF_ERROR(Send(std::move(msg)));
  absl::MutexLock lock(&mu_);
  auto done = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu_) -> bool {
    return barrier_done_[group] >= epoch || terminated_.has_value();
  };
  if (!mu_.AwaitWithTimeout(absl::Condition(&done), timeout)) {
    return absl::DeadlineExceededError(
        absl::StrCat("barrier of group ", group, " not reached within ",
                     absl::FormatDuration(timeout)));
  }
  if (barrier_done_[group] < epoch) {
    return terminated_->ok() ? absl::AbortedError("the job terminated")
                             : *terminated_;
  }
  return absl::OkStatus();
}

absl::Status Postoffice::Finish(absl::Duration timeout) {
  if (is_worker()) {
    {
      absl::MutexLock lock(&mu_);
      worker_done_sent_ = true;
    }
    Message msg;
    msg.meta.set_recipient(kSchedulerId);
    msg.meta.set_request(true);
    msg.meta.mutable_control()->set_cmd(pb::COMMAND_WORKER_DONE);
    PETREL_RETURN_IF_ERROR(Send(std::move(msg)));
  }
  return WaitForTerminate(timeout);
}

absl::Status Postoffice::WaitForTerminate(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto done = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) -> bool {
    return terminated_.has_value();
  };
  if (!mu_.AwaitWithTimeout(absl::Condition(&done), timeout)) {
    return absl::DeadlineExceededError(
        absl::StrCat("no TERMINATE from the scheduler within ",
                     absl::FormatDuration(timeout)));
  }
  return *terminated_;
}

void Postoffice::Interrupt(const std::string& reason) {
  {
    absl::MutexLock lock(&mu_);
    if (!terminated_.has_value()) terminated_ = absl::AbortedError(reason);
  }
  AbandonRequests(absl::AbortedError(reason));
}

}  // namespace petrel
