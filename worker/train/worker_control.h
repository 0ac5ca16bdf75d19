// WorkerControl: a worker's end of the checkpoint protocol
// (job/checkpoint_protocol.h). It owns the worker's control app: the
// scheduler's kPause, kResume and kStop arrive here, and the worker asks
// the scheduler for a checkpoint (kCheckpoint) or a graceful stop
// (kStopJob) through it.
//
// The handlers only record state and never wait; the training thread polls
// pause_requested() at each batch boundary (and while it waits for a pull,
// so that bounded delay cannot deadlock a cut: a worker held back by a
// paused one pauses where it waits) and then calls Pause.
//
//   WorkerControl control(postoffice);
//   PETREL_RETURN_IF_ERROR(control.Start());    // before the node joins
//   ...
//   if (control.pause_requested()) {
//     // wait for the pushes sent so far to be acknowledged, then:
//     PETREL_RETURN_IF_ERROR(control.Pause(position, timeout));
//   }
//
// Thread safety: thread-safe. Handlers run on the van thread; Pause on the
// training thread; RequestStop on any (e.g. the signal watcher's).
#ifndef PETREL_WORKER_TRAIN_WORKER_CONTROL_H_
#define PETREL_WORKER_TRAIN_WORKER_CONTROL_H_

#include <atomic>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

#include "cluster/simple_app.h"
#include "job/checkpoint_protocol.h"
#include "proto/checkpoint.pb.h"

namespace petrel {

class WorkerControl {
 public:
  // `postoffice` (a worker's) must outlive this object.
  explicit WorkerControl(Postoffice* postoffice);
  // Stops the app first: its handler uses the members after it.
  ~WorkerControl() { app_.Stop(); }
  WorkerControl(const WorkerControl&) = delete;
  WorkerControl& operator=(const WorkerControl&) = delete;

  // Registers the control app. REQUIRES: before the Postoffice joins.
  absl::Status Start();

  // A kPause is waiting for this worker's answer. Cheap.
  bool pause_requested() const { return pause_requested_.load(); }
  // Answers the pending kPause with `position`, then blocks until kResume
  // (OK) or kStop (Aborted with the scheduler's reason). DeadlineExceeded
  // when neither came within `timeout`. REQUIRES: pause_requested().
  absl::Status Pause(const pb::WorkerPosition& position,
                     absl::Duration timeout);
  // Waits up to `timeout` for a kPause (e.g. of a checkpoint this worker
  // just asked for); true when one is pending.
  bool AwaitPauseRequest(absl::Duration timeout);
  // The scheduler's kStop reason (or StopLocally's), once one arrived.
  std::optional<std::string> stop_reason() const;
  // Stops this worker without the scheduler (e.g. it did not acknowledge
  // RequestStop): the training thread ends at its next batch boundary and
  // a pause returns Aborted(reason).
  void StopLocally(const std::string& reason);
  // This worker's share is done: kPause is answered at once with
  // `position` (finished = true) from now on, a pending one included.
  void SetFinished(const pb::WorkerPosition& position);

  // Asks the scheduler for a checkpoint (e.g. "every_batches"); does not
  // wait for it.
  void RequestCheckpoint(const std::string& reason);
  // Asks the scheduler to checkpoint (when the job has a checkpoint
  // directory) and stop the job, and waits up to `ack_timeout` for it to
  // acknowledge (not for the stop). False when the cluster has not formed
  // yet (nobody to ask) or the scheduler did not acknowledge (e.g. it runs
  // without the job config): the caller then stops on its own.
  bool RequestStop(const std::string& reason,
                   absl::Duration ack_timeout = kStopAckTimeout);

 private:
  void Handle(const SimpleData& d, SimpleApp* app);

  Postoffice* const postoffice_;
  SimpleApp app_;
  std::atomic<bool> pause_requested_{false};

  mutable absl::Mutex mu_;
  std::optional<SimpleData> pending_pause_ ABSL_GUARDED_BY(mu_);
  bool paused_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<std::string> stop_ ABSL_GUARDED_BY(mu_);
  std::optional<pb::WorkerPosition> finished_ ABSL_GUARDED_BY(mu_);
};

}  // namespace petrel

#endif  // PETREL_WORKER_TRAIN_WORKER_CONTROL_H_
