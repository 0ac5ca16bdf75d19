#include "cluster/testing/van_cluster.h"

#include <utility>

#include "glog/logging.h"

#include "base/status_macros.h"
#include "cluster/key_range_map.h"

namespace petrel {

JoinResponder::JoinResponder(Postoffice* scheduler) : scheduler_(scheduler) {
  scheduler_->set_control_handler(
      [this](Message&& msg) { HandleControl(std::move(msg)); });
}

absl::Status JoinResponder::Run() {
  absl::MutexLock lock(&mu_);
  auto ended = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) -> bool {
    return result_.has_value();
  };
  mu_.Await(absl::Condition(&ended));
  return *result_;
}

void JoinResponder::Interrupt(const std::string& reason) {
  absl::MutexLock lock(&mu_);
  if (result_.has_value()) return;
  Terminate(/*failed=*/true, reason);
  result_ = absl::AbortedError(reason);
}

void JoinResponder::HandleControl(Message&& msg) {
  const pb::Control& control = msg.meta.control();
  absl::MutexLock lock(&mu_);
  if (control.cmd() == pb::COMMAND_ADD_NODE && control.nodes_size() == 1) {
    Admit(control.nodes(0));
  } else if (control.cmd() == pb::COMMAND_WORKER_DONE && formed_) {
    done_workers_.insert(msg.meta.sender());
    if (static_cast<int>(done_workers_.size()) == scheduler_->num_workers() &&
        !result_.has_value()) {
      Terminate(/*failed=*/false, "");
      result_ = absl::OkStatus();
    }
  } else if (control.cmd() == pb::COMMAND_DRAIN_DONE) {
    drain_done_.emplace_back(msg.meta.sender(), control);
  }
}

void JoinResponder::Admit(const pb::Node& joining) {
  if (formed_) return;
  if (table_.empty()) {
    table_.push_back(scheduler_->SelfNode());
    table_[0].set_id(kSchedulerId);
  }
  int rank = 0;  // the requested rank, else join order within the role
  for (const pb::Node& n : table_) {
    if (n.transport_id() == joining.transport_id()) return;  // resent
    if (n.role() == joining.role()) ++rank;
  }
  pb::Node node = joining;
  node.set_rank(joining.requested_rank() >= 0 ? joining.requested_rank()
                                              : rank);
  node.set_id(node.role() == pb::ROLE_SERVER ? ServerRankToId(node.rank())
                                             : WorkerRankToId(node.rank()));
  table_.push_back(node);
  if (static_cast<int>(table_.size()) ==
      1 + scheduler_->num_servers() + scheduler_->num_workers()) {
    SendTable();
  }
}

void JoinResponder::SendTable() {
  KeyRangeMap ranges =
      KeyRangeMap::Uniform(scheduler_->num_servers(), /*virtual_nodes=*/32)
          .value();
  scheduler_->SetCluster(table_, ranges);
  pb::Control reply;
  reply.set_cmd(pb::COMMAND_ADD_NODE);
  for (const pb::Node& n : table_) *reply.add_nodes() = n;
  for (uint64_t b : ranges.begins()) reply.add_ranges(b);
  for (int32_t o : ranges.owners()) reply.add_range_owners(o);
  for (size_t i = 1; i < table_.size(); ++i) {
    SendControl(table_[i].id(), reply);
  }
  formed_ = true;
}

void JoinResponder::Terminate(bool failed, const std::string& reason) {
  if (!formed_) return;  // joining nodes time out on their own
  pb::Control control;
  control.set_cmd(pb::COMMAND_TERMINATE);
  control.set_failed(failed);
  control.set_reason(reason);
  for (size_t i = 1; i < table_.size(); ++i) {
    SendControl(table_[i].id(), control);
  }
}

void JoinResponder::SendControl(int recipient, pb::Control control) {
  Message msg;
  msg.meta.set_recipient(recipient);
  msg.meta.set_request(false);
  *msg.meta.mutable_control() = std::move(control);
  absl::Status s = scheduler_->Send(std::move(msg));
  if (!s.ok()) LOG(WARNING) << "control to node " << recipient << ": " << s;
}

PostofficeOptions TestNodeOptions(pb::Role role, int num_servers,
                                  int num_workers, int scheduler_port) {
  PostofficeOptions po;
  po.role = role;
  po.scheduler_host = "127.0.0.1";
  po.scheduler_port = scheduler_port;
  po.advertise_host = "127.0.0.1";
  po.num_servers = num_servers;
  po.num_workers = num_workers;
  return po;
}

VanOptions TestVanOptions() {
  VanOptions van;
  van.bind_host = "127.0.0.1";
  van.tick_interval = absl::Milliseconds(10);
  return van;
}

pb::Node LoopbackNode(const Van& van, int id) {
  pb::Node n;
  n.set_id(id);
  n.set_host("127.0.0.1");
  n.set_port(van.port());
  n.set_transport_id(van.transport_id());
  n.set_curve_public_key(van.options().curve.keys.public_key);
  return n;
}

VanClusterOptions ClusterOfSize(int num_servers, int num_workers) {
  VanClusterOptions o;
  o.num_servers = num_servers;
  o.num_workers = num_workers;
  return o;
}

VanCluster::VanCluster(VanClusterOptions options)
    : options_(std::move(options)) {}

VanCluster::~VanCluster() {
  if (run_thread_.joinable()) {
    control_->Interrupt("test ended");
    run_thread_.join();
  }
  for (Node& n : workers_) n.po->Stop();
  for (Node& n : servers_) n.po->Stop();
  if (scheduler_.po) scheduler_.po->Stop();
}

VanCluster::Node VanCluster::MakeNode(pb::Role role, int rank) {
  Node node;
  node.metrics = std::make_unique<MetricsRegistry>();
  PostofficeOptions po =
      TestNodeOptions(role, options_.num_servers, options_.num_workers,
                      scheduler_.po ? scheduler_.po->port() : 0);
  po.requested_rank = role == pb::ROLE_SCHEDULER ? -1 : rank;
  po.join_timeout = options_.join_timeout;
  po.heartbeat_interval = options_.heartbeat_interval;
  VanOptions van = TestVanOptions();
  std::unique_ptr<Van> v =
      options_.van_factory
          ? options_.van_factory(role, rank, van, node.metrics.get())
          : std::make_unique<LoopbackVan>(&network_, van, node.metrics.get());
  node.po = std::make_unique<Postoffice>(po, std::move(v), node.metrics.get());
  return node;
}

absl::Status VanCluster::Start() {
  scheduler_ = MakeNode(pb::ROLE_SCHEDULER, 0);
  control_ = options_.control_factory
                 ? options_.control_factory(scheduler_.po.get())
                 : std::make_unique<JoinResponder>(scheduler_.po.get());
  PETREL_RETURN_IF_ERROR(scheduler_.po->Start());
  run_thread_ = std::thread([this] { run_status_ = control_->Run(); });
  for (int i = 0; i < options_.num_servers; ++i) {
    servers_.push_back(MakeNode(pb::ROLE_SERVER, i));
  }
  for (int i = 0; i < options_.num_workers; ++i) {
    workers_.push_back(MakeNode(pb::ROLE_WORKER, i));
  }
  std::vector<Postoffice*> all;
  for (Node& n : servers_) all.push_back(n.po.get());
  for (Node& n : workers_) all.push_back(n.po.get());
  std::vector<absl::Status> results(all.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < all.size(); ++i) {
    threads.emplace_back([&, i] { results[i] = all[i]->Start(); });
  }
  for (std::thread& t : threads) t.join();
  for (const absl::Status& s : results) PETREL_RETURN_IF_ERROR(s);
  return absl::OkStatus();
}

absl::Status VanCluster::Finish(absl::Duration timeout) {
  std::vector<absl::Status> results(workers_.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < workers_.size(); ++i) {
    threads.emplace_back(
        [&, i] { results[i] = workers_[i].po->Finish(timeout); });
  }
  for (std::thread& t : threads) t.join();
  for (Node& n : servers_) {
    PETREL_RETURN_IF_ERROR(n.po->WaitForTerminate(timeout));
  }
  for (const absl::Status& s : results) PETREL_RETURN_IF_ERROR(s);
  run_thread_.join();
  return run_status_;
}

}  // namespace petrel
