// CheckpointCoordinator: the scheduler's side of checkpoints and graceful
// stops (job/checkpoint_protocol.h). On its own thread it takes a
// checkpoint when asked (a worker's every_batches / epoch_end request,
// SIGUSR1), every checkpoint.every_seconds, at the normal end of training
// (reason "end"), and before a graceful stop (reason "signal"):
// A job that starts from a checkpoint takes none before every server has
// loaded that one (options.wait_for_start_load, OnStartLoaded), so a
// checkpoint never holds partly loaded tables and retention never removes
// the one being loaded.
//   1. creates ROOT/ckpt-N (a failure here costs the workers nothing);
//   2. asks every worker to pause: each answers at its next batch boundary
//      with its pushes acknowledged (its position), or at once when its
//      share is done; the cut is then every worker at a batch boundary with
//      all its pushes applied;
//   3. asks every server to save its tables into the directory;
//   4. writes the MANIFEST (complete from then on) and removes checkpoints
//      beyond checkpoint.keep;
//   5. resumes the workers (or stops them, for a graceful stop), whatever
//      happened in 3-4.
// A failed checkpoint logs one line naming the path and the reason, leaves
// the previous checkpoints intact and, per checkpoint.on_failure, training
// continues or the job ends as failed.
//
// Thread safety: the Request*/On* methods are thread-safe and never block
// (they may be called from the van thread); Start and Stop by the owner.
#ifndef PETREL_SCHEDULER_CHECKPOINT_COORDINATOR_H_
#define PETREL_SCHEDULER_CHECKPOINT_COORDINATOR_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

#include "cluster/postoffice.h"
#include "cluster/simple_app.h"
#include "proto/checkpoint.pb.h"
#include "proto/job.pb.h"

namespace petrel {

struct CheckpointCoordinatorOptions {
  // The job; checkpoint.* says where and when. Recorded in each manifest.
  pb::JobConfig job;
  // Longest wait for the workers to pause and for the servers to save.
  // Default 10 minutes.
  absl::Duration timeout = absl::Minutes(10);
  // The job starts from a checkpoint (restore_from or warm_start_from)
  // that its servers load after the cluster formed: no checkpoint is taken
  // (and so none removed) until OnStartLoaded. Default false.
  bool wait_for_start_load = false;
};

class CheckpointCoordinator {
 public:
  // Ends the job: OK when training finished, else the failure or the stop
  // reason. Called on the coordinator's thread, at most once.
  using EndJob = std::function<void(const absl::Status& result)>;

  // `postoffice` (the scheduler's, not started) must outlive this object.
  CheckpointCoordinator(Postoffice* postoffice,
                        CheckpointCoordinatorOptions options, EndJob end_job);
  ~CheckpointCoordinator();
  CheckpointCoordinator(const CheckpointCoordinator&) = delete;
  CheckpointCoordinator& operator=(const CheckpointCoordinator&) = delete;

  // When set (before Start), requests to the workers go to the node ids it
  // returns (the live ones, Scheduler::live_workers) instead of the whole
  // worker group, so that a dead worker does not hold a checkpoint up.
  // Called on the coordinator's thread.
  void set_live_workers(std::function<std::vector<int>()> live_workers) {
    live_workers_ = std::move(live_workers);
  }

  // When set (before Start), saves go to these server ids (the live ones,
  // Scheduler::live_servers) instead of the whole server group, so that a
  // server whose ranges failed over to a replica does not fail every later
  // checkpoint; and the manifest records the key-range map `key_ranges`
  // returns (the primaries after failovers, Scheduler::key_ranges), which
  // says which file holds which ranges. Called on the coordinator's thread.
  void set_live_servers(std::function<std::vector<int>()> live_servers,
                        std::function<KeyRangeMap()> key_ranges) {
    live_servers_ = std::move(live_servers);
    key_ranges_ = std::move(key_ranges);
  }

  // Registers the control app and starts the thread. REQUIRES: before the
  // Postoffice starts.
  absl::Status Start();
  void Stop();  // idempotent

  // Takes a checkpoint soon (ignored without a checkpoint directory).
  void RequestCheckpoint(const std::string& reason);
  // Graceful stop: checkpoint (when the job has a directory), stop the
  // workers, end the job with Aborted(reason).
  void RequestStop(const std::string& reason);
  // Every worker finished: the final checkpoint ("end"), then end the job.
  void OnWorkersDone();
  // Every server loaded the checkpoint the job starts from (the first
  // barrier of every server and worker passed). Requests and timed
  // checkpoints wait for it with wait_for_start_load; a stop before it
  // takes no checkpoint (the tables are partly loaded).
  void OnStartLoaded();

  // Checkpoints completed / failed so far.
  int64_t completed() const;
  int64_t failed() const;
  // Waits until `n` checkpoints were attempted (completed + failed); false
  // when fewer were within `timeout`.
  bool WaitForAttempts(int64_t n, absl::Duration timeout) const;

 private:
  enum class Action { kNone, kCheckpoint, kStop, kEnd };
  void Loop();
  Action NextAction(std::string* reason);
  // The rows of the job's start checkpoint are in (or there are none).
  bool StartLoadedLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !options_.wait_for_start_load || start_loaded_;
  }
  void Handle(const SimpleData& d, SimpleApp* app);
  // Steps 1-5 above. Returns the checkpoint's path.
  absl::StatusOr<std::string> TakeCheckpoint(const std::string& reason,
                                             bool then_stop,
                                             const std::string& stop_reason);
  absl::StatusOr<std::vector<pb::WorkerPosition>> PauseWorkers();
  absl::Status SaveServers(const std::string& path,
                           pb::CheckpointManifest* manifest);
  // The manifest's own fields for checkpoint `id`: format, id, time,
  // reason, the job, and the key-range map.
  void FillManifest(uint64_t id, const std::string& reason,
                    pb::CheckpointManifest* manifest);
  // Resumes the paused workers, or stops them with `stop_line`.
  void ReleaseWorkers(uint64_t id, bool then_stop,
                      const std::string& stop_line);
  // Sends `head` to every node of `group` and waits for all answers.
  absl::StatusOr<std::vector<SimpleData>> Ask(int head, const std::string& body,
                                              int group);
  // Runs a checkpoint for `reason`; Aborted (the job must end) when it
  // failed and checkpoint.on_failure is STOP, else OK.
  absl::Status Checkpoint(const std::string& reason);
  void End(const absl::Status& result);

  Postoffice* const postoffice_;
  const CheckpointCoordinatorOptions options_;
  const EndJob end_job_;
  std::function<std::vector<int>()> live_workers_;
  std::function<std::vector<int>()> live_servers_;
  std::function<KeyRangeMap()> key_ranges_;
  SimpleApp app_;
  std::thread thread_;
  uint64_t next_id_ = 0;  // coordinator thread only; 0: not yet listed
  bool ended_ = false;    // coordinator thread only

  mutable absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::deque<std::string> requests_ ABSL_GUARDED_BY(mu_);
  std::optional<std::string> stop_request_ ABSL_GUARDED_BY(mu_);
  bool workers_done_ ABSL_GUARDED_BY(mu_) = false;
  bool start_loaded_ ABSL_GUARDED_BY(mu_) = false;
  std::map<int, std::vector<SimpleData>> replies_ ABSL_GUARDED_BY(mu_);
  int64_t completed_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t failed_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace petrel

#endif  // PETREL_SCHEDULER_CHECKPOINT_COORDINATOR_H_
