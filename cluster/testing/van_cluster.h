// VanCluster: a small Petrel cluster inside one test process: a scheduler
// node, servers and workers, each with its own Postoffice and Van. By
// default the nodes talk over LoopbackVan; `van_factory` can give them
// ZmqVans on 127.0.0.1 or wrap them in a FaultVan.
//
// The scheduler node's control logic is pluggable (ClusterControl). The
// default, JoinResponder, does the least a scheduler must for Postoffices
// to join and finish: it admits every node at the rank it asks for, sends
// the node table (with a uniform key-range map) once all have joined, and
// ends the job when every worker has finished. It checks nothing and runs
// no barriers or heartbeat watch, so that tests of van/ and cluster/ depend
// on them alone; tests of the layers above plug the real Scheduler in
// (tests/harness/local_cluster.h).
//
// Thread safety: Start and Finish from the test thread; accessors any time.
#ifndef PETREL_CLUSTER_TESTING_VAN_CLUSTER_H_
#define PETREL_CLUSTER_TESTING_VAN_CLUSTER_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

#include "base/metrics.h"
#include "cluster/postoffice.h"
#include "van/loopback_van.h"

namespace petrel {

// The control logic of a cluster's scheduler node.
class ClusterControl {
 public:
  virtual ~ClusterControl() = default;
  // Runs on a thread of its own once the scheduler's Postoffice started;
  // returns the job's verdict when it ended.
  virtual absl::Status Run() = 0;
  // Ends the job as failed with `reason`.
  virtual void Interrupt(const std::string& reason) = 0;
};

// The default ClusterControl (see the file comment).
class JoinResponder : public ClusterControl {
 public:
  // Installs its handler in `scheduler`, a scheduler's Postoffice that is
  // not yet started and outlives this object.
  explicit JoinResponder(Postoffice* scheduler);

  // OK once every worker finished; Aborted after Interrupt.
  absl::Status Run() override;
  void Interrupt(const std::string& reason) override;
  // The DRAIN_DONE answers the nodes sent it (it never asks; a test
  // does, cluster/postoffice_drain_test.cc), with their senders, in the order
  // they arrived.
  std::vector<std::pair<int, pb::Control>> drain_done() const {
    absl::MutexLock lock(&mu_);
    return drain_done_;
  }

 private:
  void HandleControl(Message&& msg);
  void Admit(const pb::Node& node) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SendTable() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Terminate(bool failed, const std::string& reason)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SendControl(int recipient, pb::Control control);

  Postoffice* const scheduler_;
  mutable absl::Mutex mu_;
  std::vector<pb::Node> table_ ABSL_GUARDED_BY(mu_);  // the scheduler first
  std::vector<std::pair<int, pb::Control>> drain_done_ ABSL_GUARDED_BY(mu_);
  bool formed_ ABSL_GUARDED_BY(mu_) = false;
  absl::flat_hash_set<int> done_workers_ ABSL_GUARDED_BY(mu_);
  std::optional<absl::Status> result_ ABSL_GUARDED_BY(mu_);
};

// What VanCluster gives each node, for tests that set up nodes one by one:
// a node of `role` in a job of `num_servers` and `num_workers`, on
// 127.0.0.1, joining the scheduler at 127.0.0.1:`scheduler_port` (any rank,
// default timeouts).
PostofficeOptions TestNodeOptions(pb::Role role, int num_servers,
                                  int num_workers, int scheduler_port);
// A van bound to 127.0.0.1 that ticks every 10 ms.
VanOptions TestVanOptions();
// What another van connects to reach `van` as node `id`: 127.0.0.1, its
// port and transport id, and its CURVE public key when it has one.
pb::Node LoopbackNode(const Van& van, int id);

struct VanClusterOptions {
  int num_servers = 1;
  int num_workers = 1;
  // Makes each node's van; default: a LoopbackVan on a shared network.
  // `role` and `rank_hint` (index within the role) let tests treat nodes
  // differently.
  std::function<std::unique_ptr<Van>(pb::Role role, int rank_hint,
                                     VanOptions options,
                                     MetricsRegistry* metrics)>
      van_factory;
  // Makes the scheduler's control logic on its Postoffice (not yet
  // started); default: a JoinResponder.
  std::function<std::unique_ptr<ClusterControl>(Postoffice* scheduler)>
      control_factory;
  absl::Duration join_timeout = absl::Seconds(20);
  absl::Duration heartbeat_interval = absl::Milliseconds(100);
};

// The default options with `num_servers` servers and `num_workers` workers.
VanClusterOptions ClusterOfSize(int num_servers, int num_workers);

class VanCluster {
 public:
  explicit VanCluster(VanClusterOptions options);
  ~VanCluster();
  VanCluster(const VanCluster&) = delete;
  VanCluster& operator=(const VanCluster&) = delete;

  // Starts every node and returns once all joined (ranks follow the index
  // of each node: server(i) has rank i).
  absl::Status Start();
  // Workers finish, then waits for the control logic to end the job and
  // for every node to be told. Returns the control logic's verdict.
  absl::Status Finish(absl::Duration timeout = absl::Seconds(20));

  Postoffice* scheduler() { return scheduler_.po.get(); }
  ClusterControl* control() { return control_.get(); }
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

  VanClusterOptions options_;
  LoopbackNetwork network_;
  Node scheduler_;
  std::unique_ptr<ClusterControl> control_;
  std::vector<Node> servers_;
  std::vector<Node> workers_;
  std::thread run_thread_;
  absl::Status run_status_;
};

}  // namespace petrel

#endif  // PETREL_CLUSTER_TESTING_VAN_CLUSTER_H_
