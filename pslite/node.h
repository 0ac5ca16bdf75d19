// PS-Lite compatibility: one Petrel node of a PS-Lite program, its
// NodeRuntime and, for the scheduler, Petrel's Scheduler run on a thread of
// its own. The first Start of its customers starts it; it stops once every
// customer that started it called Finalize (ps::Postoffice gives each
// customer of a worker a node of its own, as PS-Lite makes each one a
// worker; docs/pslite.md).
//
// Thread safety: thread-safe.
#ifndef PETREL_PSLITE_NODE_H_
#define PETREL_PSLITE_NODE_H_

#include <functional>
#include <memory>
#include <set>
#include <thread>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

#include "cluster/postoffice.h"
#include "node/node_runtime.h"
#include "pslite/node_environment.h"
#include "scheduler/scheduler.h"

namespace petrel {
namespace pslite {

class PsLiteNode {
 public:
  // `before_stop` runs once the job ended, before the runtime stops.
  PsLiteNode(const PsLiteSettings& settings, std::function<void()> before_stop)
      : settings_(settings),
        before_stop_(std::move(before_stop)),
        runtime_(settings_.node) {}
  ~PsLiteNode();
  PsLiteNode(const PsLiteNode&) = delete;
  PsLiteNode& operator=(const PsLiteNode&) = delete;

  // Joins (the scheduler: binds and admits) on the first call and, with
  // `do_barrier`, waits for every node of the job; later calls wait for
  // that. Failures end the program (fatal.h).
  void Start(int customer_id, const char* argv0, bool do_barrier);
  // The last customer to call it waits (with `do_barrier`) for every node
  // to reach Finalize, then for the job's end, runs before_stop and stops
  // the node; earlier callers return once it stopped.
  void Finalize(int customer_id, bool do_barrier);
  void Barrier(int node_group);
  // Whether Start was called and Finalize has not stopped it yet.
  bool running();
  Postoffice* postoffice() { return runtime_.postoffice(); }

 private:
  enum class Stage { kNew, kStarting, kRunning, kStopping, kStopped };

  void Join(const char* argv0);
  void Stop(bool do_barrier);
  void AwaitStage(Stage stage) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const PsLiteSettings settings_;
  const std::function<void()> before_stop_;
  NodeRuntime runtime_;
  std::unique_ptr<Scheduler> scheduler_;
  std::thread scheduler_thread_;

  absl::Mutex mu_;
  Stage stage_ ABSL_GUARDED_BY(mu_) = Stage::kNew;
  std::set<int> started_ ABSL_GUARDED_BY(mu_);
  std::set<int> finalized_ ABSL_GUARDED_BY(mu_);
  absl::Status scheduler_result_ ABSL_GUARDED_BY(mu_);
  bool scheduler_done_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace pslite
}  // namespace petrel

#endif  // PETREL_PSLITE_NODE_H_
