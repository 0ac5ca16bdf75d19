// NodeRuntime: what every Petrel process that is a node of a cluster sets up
// around its Postoffice: the metrics registry and its HTTP endpoint, the
// ZeroMQ van, allocator settings for large messages, and the one-line
// readiness report that launchers and tests read from stdout:
//   PETREL_LISTEN role=scheduler host=H port=P metrics_port=M metrics_host=A
//   PETREL_READY role=server id=8 rank=0 host=H port=P metrics_port=M
//       metrics_host=A                                          (one line)
// It also fills the registry with what every node exports: the process
// metrics and petrel_build_info.
//
// Thread safety: construction and Start on the main thread; accessors are
// thread-safe.
#ifndef PETREL_NODE_NODE_RUNTIME_H_
#define PETREL_NODE_NODE_RUNTIME_H_

#include <memory>
#include <string>

#include "absl/status/status.h"

#include "base/metrics.h"
#include "base/metrics_http_server.h"
#include "base/startup_progress.h"
#include "cluster/postoffice.h"
#include "van/van.h"

namespace petrel {

struct NodeSettings {
  PostofficeOptions postoffice;
  VanOptions van;
  // Port of the /metrics endpoint: -1 disables it, 0 picks a free port.
  int metrics_port = -1;
  // Address the /metrics endpoint binds; empty: the node's own address
  // (MetricsBindHost). Default empty.
  std::string metrics_bind;
  MetricsHttpServerOptions metrics_http;
  // Warn at Start that the cluster is open when CURVE is off. A launcher
  // that warned once for the whole job turns it off in the nodes it starts
  // (kOpenClusterWarnedVariable). Default true.
  bool warn_open_cluster = true;
};

// Set (to 1) in the environment of the nodes a launcher starts once it
// printed the job's one "the cluster is open" warning; node settings built
// from flags or DMLC_* variables then leave warn_open_cluster off.
inline constexpr char kOpenClusterWarnedVariable[] =
    "PETREL_OPEN_CLUSTER_WARNED";

// The address the /metrics endpoint binds by default, never all
// interfaces: the advertised host when given, else the van's bind address
// when it is not 0.0.0.0, else (servers, workers) the local address that
// routes to the scheduler, else 127.0.0.1.
std::string MetricsBindHost(const NodeSettings& settings);

class NodeRuntime {
 public:
  explicit NodeRuntime(const NodeSettings& settings);
  ~NodeRuntime();
  NodeRuntime(const NodeRuntime&) = delete;
  NodeRuntime& operator=(const NodeRuntime&) = delete;

  // Starts the metrics endpoint and the Postoffice (a non-scheduler joins
  // here), then prints the readiness line. Errors as Postoffice::Start.
  absl::Status Start();
  void Stop();

  Postoffice* postoffice() { return postoffice_.get(); }
  MetricsRegistry* metrics() { return &metrics_; }
  // What the node is doing before it serves; a signal cancels it
  // (RunNodeDaemon).
  StartupProgress* startup() { return &startup_; }
  int metrics_port() const;
  // The address the metrics endpoint bound (empty when it is off).
  const std::string& metrics_host() const { return metrics_host_; }

 private:
  const NodeSettings settings_;
  MetricsRegistry metrics_;
  StartupProgress startup_;
  MetricsHttpServer metrics_server_;
  std::string metrics_host_;
  std::unique_ptr<Postoffice> postoffice_;
};

// Sets glibc's allocator up so that large message buffers are reused from
// the heap instead of being mapped (and page-faulted) afresh for every
// message: one arena, no mmap, freed memory kept up to 1 GiB. Process-wide:
// call once from main, before starting threads.
void TuneAllocatorForLargeMessages();

// 0 for OK, 2 for InvalidArgument (bad flags or configuration),
// kExitOutOfJob (3) for a node the job went on without (base/out_of_job.h),
// 1 otherwise.
int ExitCodeFor(const absl::Status& status);

}  // namespace petrel

#endif  // PETREL_NODE_NODE_RUNTIME_H_
