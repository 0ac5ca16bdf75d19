// LocalCluster: a whole Petrel cluster (scheduler, servers, workers) inside
// one test process, each node with its own Postoffice and Van: a VanCluster
// (cluster/testing/van_cluster.h) whose scheduler node runs the real Scheduler.
// By default the nodes talk over LoopbackVan; `van_factory` can give them
// ZmqVans on 127.0.0.1 or wrap them in a FaultVan.
//
// Thread safety: Start and Finish from the test thread; accessors any time.
#ifndef PETREL_TESTS_HARNESS_LOCAL_CLUSTER_H_
#define PETREL_TESTS_HARNESS_LOCAL_CLUSTER_H_

#include "cluster/testing/van_cluster.h"
#include "scheduler/scheduler.h"

namespace petrel {

// VanClusterOptions, whose control_factory LocalCluster sets, plus the
// Scheduler's options (its join_timeout is the cluster's).
struct LocalClusterOptions : VanClusterOptions {
  SchedulerOptions scheduler;
};

class LocalCluster : public VanCluster {
 public:
  explicit LocalCluster(LocalClusterOptions options);

  // The scheduler's logic. REQUIRES: Start was called.
  Scheduler* scheduler_logic();
};

}  // namespace petrel

#endif  // PETREL_TESTS_HARNESS_LOCAL_CLUSTER_H_
