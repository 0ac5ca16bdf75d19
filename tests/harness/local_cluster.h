// LocalCluster: a whole Petrel cluster (scheduler, servers, workers) inside
// one test process, each node with its own Postoffice and Van. By default
// the nodes talk over LoopbackVan; `van_factory` can give them ZmqVans on
// 127.0.0.1 or wrap them in a FaultVan.
//
// Thread safety: Start and Finish from the test thread; accessors any time.
#ifndef PETREL_TESTS_HARNESS_LOCAL_CLUSTER_H_
#define PETREL_TESTS_HARNESS_LOCAL_CLUSTER_H_

#include <functional>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "scheduler/scheduler.h"
#include "van/loopback_van.h"
#include "van/postoffice.h"

namespace petrel {

struct LocalClusterOptions {
  int num_servers = 1;
  int num_workers = 1;
  // Makes each node's van; default: a LoopbackVan on a shared network.
  // `role` and `rank_hint` (index within the role) let tests treat nodes
  // differently.
  std::function<std::unique_ptr<Van>(pb::Role role, int rank_hint,
                                     VanOptions options,
                                     MetricsRegistry* metrics)>
      van_factory;
  SchedulerOptions scheduler;
  absl::Duration join_timeout = absl::Seconds(20);
  absl::Duration heartbeat_interval = absl::Milliseconds(100);
};

class LocalCluster {
 public:
  explicit LocalCluster(LocalClusterOptions options);
  ~LocalCluster();

  // Starts every node and returns once all joined (ranks follow the index
  // of each node: server(i) has rank i).
  absl::Status Start();
  // Workers finish, then waits for the scheduler to end the job and for
  // every node to be told. Returns the scheduler's verdict.
  absl::Status Finish(absl::Duration timeout = absl::Seconds(20));

  Postoffice* scheduler() { return scheduler_.po.get(); }
  Scheduler* scheduler_logic() { return scheduler_logic_.get(); }
  Postoffice* server(int i) { return servers_[i].po.get(); }
  Postoffice* worker(int i) { return workers_[i].po.get(); }
  MetricsRegistry* server_metrics(int i) { return servers_[i].metrics.get(); }
  MetricsRegistry* worker_metrics(int i) { return workers_[i].metrics.get(); }
  MetricsRegistry* scheduler_metrics() { return scheduler_.metrics.get(); }

 private:
  struct Node {
    std::unique_ptr<MetricsRegistry> metrics;
    std::unique_ptr<Postoffice> po;
  };
  Node MakeNode(pb::Role role, int rank);

  LocalClusterOptions options_;
  LoopbackNetwork network_;
  Node scheduler_;
  std::unique_ptr<Scheduler> scheduler_logic_;
  std::vector<Node> servers_;
  std::vector<Node> workers_;
  std::thread run_thread_;
  absl::Status run_status_;
};

}  // namespace petrel

#endif  // PETREL_TESTS_HARNESS_LOCAL_CLUSTER_H_
