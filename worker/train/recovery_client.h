// RecoveryClient: a training worker's end of the recovery protocol
// (job/recovery_protocol.h). The trainer reports its progress to the
// scheduler through it, picks up the pieces of data the scheduler
// reassigned to it from a dead worker, and asks at the end whether there
// is more to train or the job is finished.
//
//   RecoveryClient recovery(postoffice);
//   PETREL_RETURN_IF_ERROR(recovery.Start());  // before the node joins
//   ...
//   recovery.Report(progress);                  // every kProgressInterval
//   for (pb::DataPiece& p : recovery.TakeAssigned()) { /* train it too */ }
//   ...
//   if (recovery.stop_training()) { /* early stopping: end the training */ }
//   absl::StatusOr<pb::RecoveryReply> r = recovery.Done(progress, timeout);
//
// Thread safety: thread-safe. The response handler runs on the van thread;
// the rest on the training thread.
#ifndef PETREL_WORKER_TRAIN_RECOVERY_CLIENT_H_
#define PETREL_WORKER_TRAIN_RECOVERY_CLIENT_H_

#include <atomic>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

#include "cluster/simple_app.h"
#include "proto/recovery.pb.h"

namespace petrel {

class RecoveryClient {
 public:
  // `postoffice` (a worker's) must outlive this object.
  explicit RecoveryClient(Postoffice* postoffice);
  // Stops the app first: its handler uses the members after it.
  ~RecoveryClient() { app_.Stop(); }
  RecoveryClient(const RecoveryClient&) = delete;
  RecoveryClient& operator=(const RecoveryClient&) = delete;

  // Registers the app. REQUIRES: before the Postoffice joins.
  absl::Status Start();

  // Sends `progress` (kProgress); does not wait for the answer.
  void Report(const pb::WorkerProgress& progress);
  // Pieces assigned to this worker and not taken yet (each once). Cheap
  // when there are none.
  std::vector<pb::DataPiece> TakeAssigned();
  // Sends kDone with `progress` and waits up to `timeout` for the answer:
  // more pieces to train (also taken, as by TakeAssigned) or finished.
  // DeadlineExceeded when the scheduler did not answer in time.
  absl::StatusOr<pb::RecoveryReply> Done(const pb::WorkerProgress& progress,
                                         absl::Duration timeout);
  // Tells the scheduler that this worker's training failed with `reason`
  // (kFailed), so that the job fails now rather than go on without it.
  // Waits up to `timeout` for the acknowledgement; false without one.
  bool ReportFailure(const std::string& reason, absl::Duration timeout);
  // Sends an evaluation's result (kEval) and waits up to `wait` for the
  // acknowledgement (zero: not at all); false without one.
  bool ReportEval(const pb::EvalReport& report, absl::Duration wait);
  // The scheduler said to stop training (early stopping). Cheap.
  bool stop_training() const { return stop_training_.load(); }

 private:
  void HandleReply(const SimpleData& d);

  SimpleApp app_;
  std::atomic<bool> have_new_{false};
  std::atomic<bool> stop_training_{false};

  absl::Mutex mu_;
  absl::flat_hash_set<int64_t> seen_ ABSL_GUARDED_BY(mu_);
  std::vector<pb::DataPiece> new_ ABSL_GUARDED_BY(mu_);
  std::optional<pb::RecoveryReply> finished_ ABSL_GUARDED_BY(mu_);
};

}  // namespace petrel

#endif  // PETREL_WORKER_TRAIN_RECOVERY_CLIENT_H_
