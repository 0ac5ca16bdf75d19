// WorkerRecovery: the scheduler's side of worker failures (docs/design.md,
// "Worker failures"; job/recovery_protocol.h). Training workers report
// their progress (the pieces of data they hold and where they stand in
// each) every kProgressInterval. When a worker that reported dies (the
// Scheduler's worker-lost hook), on its own thread it
//   1. tells every server to drop the worker from the bounded-delay clock
//      (held pulls are released) and learns the worker's last clock there;
//   2. counts the examples trained twice: the batches between the clock of
//      the worker's last report and the servers' clock of it;
//   3. cuts what is left of each of the worker's pieces into one piece per
//      epoch and deals them out, round robin, to the live workers holding
//      the fewest pieces; a worker gets them in the answer to its next
//      kProgress (or to its waiting kDone).
// kDone is answered with finished = true once every worker is done or
// dead and no death is still being handled; the summary of the deaths is
// logged then and sent with it.
//
// Early stopping: once worker 0 reports an evaluation with stop_training
// (kEval), every answer carries stop_training, kDone gets no more pieces
// and a dead worker's data is not dealt out again. Every progress report
// and evaluation also goes to the hooks (the job's progress line and CSV,
// scheduler/job_progress.h).
//
// Thread safety: the public methods are thread-safe; OnWorkerLost never
// blocks (it runs under the Scheduler's lock, on the van thread).
#ifndef PETREL_SCHEDULER_WORKER_RECOVERY_H_
#define PETREL_SCHEDULER_WORKER_RECOVERY_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

#include "cluster/postoffice.h"
#include "cluster/simple_app.h"
#include "proto/recovery.pb.h"

namespace petrel {

class WorkerRecovery {
 public:
  // Ends the job as failed (a worker reported that its training failed).
  // Called on the van thread, without this object's lock.
  using FailJob = std::function<void(const std::string& reason)>;
  // Receive every worker's progress report and worker 0's evaluations.
  // Called on the van thread, without this object's lock.
  using ProgressHook =
      std::function<void(int rank, const pb::WorkerProgress& progress)>;
  using EvalHook = std::function<void(const pb::EvalReport& report)>;

  // `postoffice` (the scheduler's, not started) must outlive this object.
  WorkerRecovery(Postoffice* postoffice, FailJob fail_job);
  ~WorkerRecovery();
  WorkerRecovery(const WorkerRecovery&) = delete;
  WorkerRecovery& operator=(const WorkerRecovery&) = delete;

  // REQUIRES: before Start.
  void set_progress_hook(ProgressHook hook) {
    progress_hook_ = std::move(hook);
  }
  void set_eval_hook(EvalHook hook) { eval_hook_ = std::move(hook); }

  // Registers the app and starts the thread. REQUIRES: before the
  // Postoffice starts.
  absl::Status Start();
  void Stop();  // idempotent

  // Worker node `node_id` was declared dead: true when the job can go on
  // without it (it reported as a training worker and another worker is
  // alive); its data is then reassigned on this object's thread.
  bool OnWorkerLost(int node_id);

  // The deaths so far (for tests and the summary).
  std::vector<pb::WorkerDeath> deaths() const;

 private:
  struct Worker {
    bool reported = false;
    bool dead = false;
    bool failed = false;  // its training failed (kFailed): not survived
    int64_t clock = 0;
    int64_t examples_trained = 0;
    int32_t batch_size = 0;
    std::map<int64_t, pb::DataPiece> pieces;  // by id
    std::vector<pb::DataPiece> to_deliver;    // assigned, not yet reported
    std::optional<SimpleData> waiting_done;   // its unanswered kDone
  };

  void Handle(const SimpleData& d, SimpleApp* app);
  void HandleEval(const SimpleData& d, SimpleApp* app);
  void Update(int rank, const pb::WorkerProgress& progress)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Loop();
  // Steps 1-3 above for worker `rank`.
  void Reassign(int rank);
  // The last clock of worker `rank` on the servers (the largest), or -1.
  int64_t DropFromClocks(int rank);
  void Deliver(int rank) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void MaybeFinish() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string Summary() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Postoffice* const postoffice_;
  const FailJob fail_job_;
  ProgressHook progress_hook_;
  EvalHook eval_hook_;
  SimpleApp app_;
  std::thread thread_;

  mutable absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  bool stop_training_ ABSL_GUARDED_BY(mu_) = false;   // early stopping
  std::vector<Worker> workers_ ABSL_GUARDED_BY(mu_);  // by rank
  std::deque<int> pending_ ABSL_GUARDED_BY(mu_);      // dead, not handled
  std::vector<pb::WorkerDeath> deaths_ ABSL_GUARDED_BY(mu_);
  int64_t next_piece_id_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<int, std::vector<SimpleData>> replies_ ABSL_GUARDED_BY(mu_);
};

}  // namespace petrel

#endif  // PETREL_SCHEDULER_WORKER_RECOVERY_H_
