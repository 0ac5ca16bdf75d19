#include "tests/harness/local_cluster.h"

#include <thread>

#include "base/status_macros.h"

namespace petrel {

LocalCluster::LocalCluster(LocalClusterOptions options)
    : options_(std::move(options)) {}

LocalCluster::~LocalCluster() {
  if (run_thread_.joinable()) {
    scheduler_logic_->Interrupt("test ended");
    run_thread_.join();
  }
  for (Node& n : workers_) n.po->Stop();
  for (Node& n : servers_) n.po->Stop();
  if (scheduler_.po) scheduler_.po->Stop();
}

LocalCluster::Node LocalCluster::MakeNode(pb::Role role, int rank) {
  Node node;
  node.metrics = std::make_unique<MetricsRegistry>();
  PostofficeOptions po;
  po.role = role;
  po.scheduler_host = "127.0.0.1";
  po.scheduler_port = scheduler_.po ? scheduler_.po->port() : 0;
  po.advertise_host = "127.0.0.1";
  po.num_servers = options_.num_servers;
  po.num_workers = options_.num_workers;
  po.requested_rank = role == pb::ROLE_SCHEDULER ? -1 : rank;
  po.join_timeout = options_.join_timeout;
  po.heartbeat_interval = options_.heartbeat_interval;
  VanOptions van;
  van.bind_host = "127.0.0.1";
  van.tick_interval = absl::Milliseconds(10);
  std::unique_ptr<Van> v =
      options_.van_factory
          ? options_.van_factory(role, rank, van, node.metrics.get())
          : std::make_unique<LoopbackVan>(&network_, van, node.metrics.get());
  node.po = std::make_unique<Postoffice>(po, std::move(v), node.metrics.get());
  return node;
}

absl::Status LocalCluster::Start() {
  scheduler_ = MakeNode(pb::ROLE_SCHEDULER, 0);
  SchedulerOptions so = options_.scheduler;
  so.join_timeout = options_.join_timeout;
  scheduler_logic_ = std::make_unique<Scheduler>(scheduler_.po.get(), so);
  PETREL_RETURN_IF_ERROR(scheduler_.po->Start());
  run_thread_ = std::thread([this] { run_status_ = scheduler_logic_->Run(); });
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

absl::Status LocalCluster::Finish(absl::Duration timeout) {
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
