#include "scheduler/scheduler_daemon.h"

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

#include "base/config_file.h"
#include "base/status_macros.h"
#include "checkpoint/checkpoint_dir.h"
#include "checkpoint/root_lock.h"
#include "checkpoint/start_checkpoint.h"
#include "job/job_check.h"
#include "proto/job.pb.h"
#include "scheduler/checkpoint_coordinator.h"
#include "scheduler/job_progress.h"
#include "scheduler/scheduler.h"
#include "scheduler/worker_recovery.h"

namespace petrel {
namespace {

// How long a scheduler waits for the job that holds its checkpoint root to
// exit: a job killed a moment ago (its daemons die with petrel-launch)
// may still be on its way out.
constexpr absl::Duration kRootLockWait = absl::Seconds(10);

// Checks the checkpoint a job restores from: it exists, is complete and
// was taken with `num_workers` workers.
absl::Status CheckRestore(const pb::JobConfig& job, int num_workers) {
  absl::StatusOr<StartCheckpoint> start =
      FindStartCheckpoint(job.checkpoint(), num_workers);
  if (!start.ok()) return start.status();
  if (start->restore) LOG(INFO) << "the job resumes from " << start->dir;
  return absl::OkStatus();
}

class SchedulerDaemon : public NodeDaemon {
 public:
  explicit SchedulerDaemon(const SchedulerDaemonOptions& options)
      : opts_(options) {}
  bool handles_usr1() const override { return true; }
  absl::Status LoadConfig(ClusterDefaults* defaults) override {
    if (opts_.config_path.empty()) return absl::OkStatus();
    absl::Status s = ParseTextProtoFile(opts_.config_path, &job_);
    if (!s.ok()) return s;
    defaults->num_servers = job_.num_servers();
    defaults->num_workers = job_.num_workers();
    return absl::OkStatus();
  }
  absl::Status CheckFlags(const NodeSettings& settings) override {
    if (!opts_.config_path.empty()) {
      absl::Status checked = CheckJobConfig(
          job_, settings.postoffice.num_servers, PhysicalMemoryBytes());
      if (!checked.ok()) return Annotate(checked, opts_.config_path);
    }
    if (opts_.config_path.empty() &&
        (!opts_.checkpoint_dir.empty() || !opts_.restore_from.empty())) {
      return absl::InvalidArgumentError(
          "--checkpoint_dir and --restore_from need --config");
    }
    auto* ckpt = job_.mutable_checkpoint();
    if (!opts_.checkpoint_dir.empty()) ckpt->set_dir(opts_.checkpoint_dir);
    if (!opts_.restore_from.empty()) ckpt->set_restore_from(opts_.restore_from);
    if (!ckpt->dir().empty()) {
      absl::Status s = CheckWritableDir(ckpt->dir());
      if (!s.ok()) {
        return absl::Status(
            s.code(),
            absl::StrCat("checkpoint.dir ", ckpt->dir(), ": ", s.message()));
      }
      // Before "latest" is resolved: no other job adds or removes
      // checkpoints under the root while this one runs.
      absl::StatusOr<std::unique_ptr<CheckpointRootLock>> lock =
          CheckpointRootLock::Acquire(ckpt->dir(), kRootLockWait);
      if (!lock.ok()) return lock.status();
      root_lock_ = *std::move(lock);
    }
    absl::Status s = CheckRestore(job_, settings.postoffice.num_workers);
    if (!s.ok()) return s;
    if (!opts_.progress_csv.empty()) {
      job_.mutable_train()->set_progress_csv(opts_.progress_csv);
    }
    const std::string& csv = job_.train().progress_csv();
    if (!csv.empty()) {
      absl::Status w = CheckWritableFile(csv);
      if (!w.ok()) {
        return absl::Status(w.code(), absl::StrCat("train.progress_csv ", csv,
                                                   ": ", w.message()));
      }
    }
    options_.auth_token = settings.postoffice.auth_token;
    options_.join_timeout = settings.postoffice.join_timeout;
    options_.heartbeat_timeout = opts_.heartbeat_timeout;
    options_.connection_grace = opts_.connection_grace;
    options_.virtual_nodes = opts_.virtual_nodes;
    options_.fail_on_dead_node = opts_.fail_on_dead_node;
    options_.replicas = opts_.replicas;
    if (!opts_.replicas_set && job_.replicas() > 0) {
      options_.replicas = job_.replicas();
    }
    if (options_.replicas > settings.postoffice.num_servers) {
      return absl::InvalidArgumentError(
          absl::StrCat("--replicas=", options_.replicas, " exceeds the ",
                       settings.postoffice.num_servers, " servers"));
    }
    options_.recover = opts_.recover;
    if (opts_.recover && settings.van.port == 0) {
      return absl::InvalidArgumentError(
          "--recover needs the dead scheduler's --port (the nodes reconnect "
          "to it)");
    }
    return absl::OkStatus();
  }
  absl::Status Build(NodeRuntime& runtime) override {
    scheduler_ = std::make_unique<Scheduler>(runtime.postoffice(), options_);
    // petrelctl's checkpoint and stop take the paths SIGUSR1 and SIGTERM do.
    AdminActions admin;
    admin.stop = [this, &runtime](const std::string& reason) {
      Interrupt(runtime, reason);
    };
    admin.checkpoint = [this]() -> absl::Status {
      if (coordinator_ == nullptr || job_.checkpoint().dir().empty()) {
        return absl::FailedPreconditionError(
            "the job has no checkpoint directory (--config with checkpoint.dir "
            "or --checkpoint_dir)");
      }
      LOG(INFO) << "petrelctl: taking a checkpoint";
      coordinator_->RequestCheckpoint("on_demand");
      return absl::OkStatus();
    };
    scheduler_->set_admin_actions(std::move(admin));
    JobProgressOptions popts;
    popts.csv_path = job_.train().progress_csv();
    // A recovered job's CSV goes on from the dead scheduler's rows.
    popts.append_csv = opts_.recover;
    if (job_.train().progress_interval_s() > 0) {
      popts.interval = absl::Seconds(job_.train().progress_interval_s());
    }
    absl::StatusOr<std::unique_ptr<JobProgress>> progress =
        JobProgress::Create(popts);
    if (!progress.ok()) return progress.status();
    progress_ = std::move(*progress);
    if (opts_.survive_worker_failures) {
      recovery_ = std::make_unique<WorkerRecovery>(
          runtime.postoffice(), [this](const std::string& reason) {
            scheduler_->EndJob(absl::AbortedError(reason));
          });
      recovery_->set_progress_hook(
          [this](int rank, const pb::WorkerProgress& p) {
            progress_->OnProgress(rank, p);
          });
      recovery_->set_eval_hook(
          [this](const pb::EvalReport& r) { progress_->OnEval(r); });
      scheduler_->set_worker_lost_hook(
          [this](int id) { return recovery_->OnWorkerLost(id); });
      absl::Status s = recovery_->Start();
      if (!s.ok()) return s;
    }
    if (opts_.config_path.empty()) return absl::OkStatus();
    CheckpointCoordinatorOptions copts;
    copts.job = job_;
    copts.timeout = opts_.checkpoint_timeout;
    // A recovering scheduler takes over after the load: the nodes do not
    // pass that barrier again.
    copts.wait_for_start_load =
        !opts_.recover && (!job_.checkpoint().restore_from().empty() ||
                           !job_.checkpoint().warm_start_from().empty());
    coordinator_ = std::make_unique<CheckpointCoordinator>(
        runtime.postoffice(), copts,
        [this](const absl::Status& result) { scheduler_->EndJob(result); });
    scheduler_->set_workers_done_hook(
        [this] { coordinator_->OnWorkersDone(); });
    // The servers load the start checkpoint before this barrier, the
    // workers train only after it.
    scheduler_->set_barrier_passed_hook([this](int group) {
      if (group == (kServerGroup | kWorkerGroup)) {
        coordinator_->OnStartLoaded();
      }
    });
    coordinator_->set_live_workers(
        [this] { return scheduler_->live_workers(); });
    coordinator_->set_live_servers(
        [this] { return scheduler_->live_servers(); },
        [this] { return scheduler_->key_ranges(); });
    return coordinator_->Start();
  }
  absl::Status Run(NodeRuntime& runtime) override {
    absl::Status status = runtime.Start();
    if (status.ok()) status = scheduler_->Run();
    if (coordinator_ != nullptr) coordinator_->Stop();
    if (recovery_ != nullptr) recovery_->Stop();
    progress_->Finish();
    if (status.ok()) LOG(INFO) << "job finished";
    return status;
  }
  void Interrupt(NodeRuntime&, const std::string& reason) override {
    if (coordinator_ == nullptr) {
      scheduler_->Interrupt(reason);
      return;
    }
    LOG(INFO) << reason << ": stopping the job"
              << (job_.checkpoint().dir().empty() ? "" : " after a checkpoint");
    coordinator_->RequestStop(reason + " by the scheduler");
  }
  void OnUsr1(NodeRuntime&) override {
    if (coordinator_ == nullptr || job_.checkpoint().dir().empty()) {
      LOG(WARNING) << "SIGUSR1: the job has no checkpoint directory";
      return;
    }
    LOG(INFO) << "SIGUSR1: taking a checkpoint";
    coordinator_->RequestCheckpoint("on_demand");
  }

 private:
  const SchedulerDaemonOptions opts_;
  pb::JobConfig job_;
  // Held from the flags' check to the exit: this job alone writes
  // checkpoint.dir (checkpoint/root_lock.h).
  std::unique_ptr<CheckpointRootLock> root_lock_;
  SchedulerOptions options_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<JobProgress> progress_;
  // After scheduler_, so destroyed first: the scheduler's hook calls it.
  std::unique_ptr<WorkerRecovery> recovery_;
  // After scheduler_, so destroyed first: its thread calls scheduler_.
  std::unique_ptr<CheckpointCoordinator> coordinator_;
};

}  // namespace

std::unique_ptr<NodeDaemon> NewSchedulerDaemon(
    const SchedulerDaemonOptions& options) {
  return std::make_unique<SchedulerDaemon>(options);
}

}  // namespace petrel
