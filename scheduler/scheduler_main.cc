// petrel-scheduler: admits the nodes of a job, runs its barriers, watches
// heartbeats and connections (a node whose process died is declared dead
// within --connection_grace_ms) and ends the job when every worker has
// finished. With the job
// config (--config) it also coordinates checkpoints (checkpoint.*,
// --checkpoint_dir) and graceful stops:
//
//   petrel-scheduler --port=9000 --num_servers=2 --num_workers=4
//   petrel-scheduler --port=9000 --config=job.textproto
//
// A training worker that dies does not fail the job (unless
// --survive_worker_failures=false): its data goes to the live workers.
// SIGUSR1 takes a checkpoint now; SIGTERM/SIGINT checkpoints (with a
// checkpoint directory), stops the workers and ends the job; a second
// signal ends the scheduler at once.
//
// Exit codes: 0 the job finished, 1 it failed or was stopped (a node died,
// the cluster did not form, a signal), 2 bad flags or configuration.
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gflags/gflags.h"
#include "glog/logging.h"

#include "base/config_file.h"
#include "base/status_macros.h"
#include "checkpoint/checkpoint_dir.h"
#include "checkpoint/start_checkpoint.h"
#include "job/job_check.h"
#include "scheduler/checkpoint_coordinator.h"
#include "scheduler/scheduler.h"
#include "scheduler/worker_recovery.h"
#include "van/daemon_main.h"

DEFINE_int32(heartbeat_timeout_s, 30,
             "Declare a node dead after this many seconds without a "
             "heartbeat; 0 disables. Default 30.");
DEFINE_int32(connection_grace_ms, 300,
             "Declare a node dead when the scheduler's connection to it "
             "closed (its process died) and did not come back within this "
             "many milliseconds (0..60000); 0 disables, leaving heartbeats "
             "only. Default 300.");
DEFINE_bool(recover, false,
            "Take over a running job whose scheduler died: start with the "
            "dead scheduler's --port (and address), --num_servers and "
            "--num_workers; every node rejoins with its id within "
            "--join_timeout_s and the job goes on (docs/failures.md). "
            "Default false.");
DEFINE_int32(virtual_nodes, 32, "Key ranges per server (1..4096). Default 32.");
DEFINE_bool(
    fail_on_dead_node, true,
    "End the job as failed when a node is declared dead. Default true.");
DEFINE_bool(survive_worker_failures, true,
            "A training worker that dies does not fail the job: its data "
            "goes to the live workers (docs/design.md, \"Worker "
            "failures\"). Default true.");
DEFINE_string(config, "",
              "The job config (protobuf text format, proto/job.proto): its "
              "cluster sizes are the defaults of --num_servers/--num_workers "
              "and its checkpoint section drives checkpoints. Default empty: "
              "no checkpoints, no graceful stop.");
DEFINE_string(checkpoint_dir, "",
              "Where checkpoints go; overrides checkpoint.dir. Default empty.");
DEFINE_string(restore_from, "",
              "A checkpoint directory or 'latest' (in the checkpoint "
              "directory) the job resumes from; overrides "
              "checkpoint.restore_from. The scheduler checks that it exists "
              "and fits the job. Default empty.");
DEFINE_int32(checkpoint_timeout_s, 600,
             "Longest wait for the workers to pause and the servers to save "
             "a checkpoint (1..86400). Default 600.");

namespace {

// Checks the checkpoint a job restores from: it exists, is complete and
// was taken with `num_workers` workers.
absl::Status CheckRestore(const petrel::pb::JobConfig& job, int num_workers) {
  absl::StatusOr<petrel::StartCheckpoint> start =
      petrel::FindStartCheckpoint(job.checkpoint(), num_workers);
  if (!start.ok()) return start.status();
  if (start->restore) LOG(INFO) << "the job resumes from " << start->dir;
  return absl::OkStatus();
}

class SchedulerDaemon : public petrel::NodeDaemon {
 public:
  absl::Status LoadConfig() override {
    if (FLAGS_config.empty()) return absl::OkStatus();
    absl::Status s = petrel::ParseTextProtoFile(FLAGS_config, &job_);
    if (!s.ok()) return s;
    if (job_.num_servers() > 0) {
      gflags::SetCommandLineOptionWithMode(
          "num_servers", std::to_string(job_.num_servers()).c_str(),
          gflags::SET_FLAGS_DEFAULT);
    }
    if (job_.num_workers() > 0) {
      gflags::SetCommandLineOptionWithMode(
          "num_workers", std::to_string(job_.num_workers()).c_str(),
          gflags::SET_FLAGS_DEFAULT);
    }
    return absl::OkStatus();
  }
  absl::Status CheckFlags(const petrel::NodeSettings& settings) override {
    if (!FLAGS_config.empty()) {
      absl::Status checked = petrel::CheckJobConfig(
          job_, settings.postoffice.num_servers, petrel::PhysicalMemoryBytes());
      if (!checked.ok()) return petrel::Annotate(checked, FLAGS_config);
    }
    if (FLAGS_config.empty() &&
        (!FLAGS_checkpoint_dir.empty() || !FLAGS_restore_from.empty())) {
      return absl::InvalidArgumentError(
          "--checkpoint_dir and --restore_from need --config");
    }
    if (FLAGS_checkpoint_timeout_s < 1 || FLAGS_checkpoint_timeout_s > 86400) {
      return absl::InvalidArgumentError(
          "--checkpoint_timeout_s: must be in 1..86400");
    }
    auto* ckpt = job_.mutable_checkpoint();
    if (!FLAGS_checkpoint_dir.empty()) ckpt->set_dir(FLAGS_checkpoint_dir);
    if (!FLAGS_restore_from.empty()) ckpt->set_restore_from(FLAGS_restore_from);
    if (!ckpt->dir().empty()) {
      absl::Status s = petrel::CheckWritableDir(ckpt->dir());
      if (!s.ok()) {
        return absl::Status(
            s.code(),
            absl::StrCat("checkpoint.dir ", ckpt->dir(), ": ", s.message()));
      }
    }
    absl::Status s = CheckRestore(job_, settings.postoffice.num_workers);
    if (!s.ok()) return s;
    if (FLAGS_virtual_nodes < 1 || FLAGS_virtual_nodes > 4096) {
      return absl::InvalidArgumentError("--virtual_nodes: must be in 1..4096");
    }
    options_.auth_token = settings.postoffice.auth_token;
    options_.join_timeout = settings.postoffice.join_timeout;
    options_.heartbeat_timeout = absl::Seconds(FLAGS_heartbeat_timeout_s);
    if (FLAGS_connection_grace_ms < 0 || FLAGS_connection_grace_ms > 60000) {
      return absl::InvalidArgumentError(
          "--connection_grace_ms: must be in 0..60000");
    }
    options_.connection_grace = absl::Milliseconds(FLAGS_connection_grace_ms);
    options_.virtual_nodes = FLAGS_virtual_nodes;
    options_.fail_on_dead_node = FLAGS_fail_on_dead_node;
    options_.recover = FLAGS_recover;
    if (FLAGS_recover && settings.van.port == 0) {
      return absl::InvalidArgumentError(
          "--recover needs the dead scheduler's --port (the nodes reconnect "
          "to it)");
    }
    return absl::OkStatus();
  }
  absl::Status Build(petrel::NodeRuntime& runtime) override {
    scheduler_ =
        std::make_unique<petrel::Scheduler>(runtime.postoffice(), options_);
    if (FLAGS_survive_worker_failures) {
      recovery_ = std::make_unique<petrel::WorkerRecovery>(
          runtime.postoffice(), [this](const std::string& reason) {
            scheduler_->EndJob(absl::AbortedError(reason));
          });
      scheduler_->set_worker_lost_hook(
          [this](int id) { return recovery_->OnWorkerLost(id); });
      absl::Status s = recovery_->Start();
      if (!s.ok()) return s;
    }
    if (FLAGS_config.empty()) return absl::OkStatus();
    petrel::CheckpointCoordinatorOptions copts;
    copts.job = job_;
    copts.timeout = absl::Seconds(FLAGS_checkpoint_timeout_s);
    coordinator_ = std::make_unique<petrel::CheckpointCoordinator>(
        runtime.postoffice(), copts,
        [this](const absl::Status& result) { scheduler_->EndJob(result); });
    scheduler_->set_workers_done_hook(
        [this] { coordinator_->OnWorkersDone(); });
    coordinator_->set_live_workers(
        [this] { return scheduler_->live_workers(); });
    return coordinator_->Start();
  }
  absl::Status Run(petrel::NodeRuntime& runtime) override {
    absl::Status status = runtime.Start();
    if (status.ok()) status = scheduler_->Run();
    if (coordinator_ != nullptr) coordinator_->Stop();
    if (recovery_ != nullptr) recovery_->Stop();
    if (status.ok()) LOG(INFO) << "job finished";
    return status;
  }
  void Interrupt(petrel::NodeRuntime&, const std::string& reason) override {
    if (coordinator_ == nullptr) {
      scheduler_->Interrupt(reason);
      return;
    }
    LOG(INFO) << reason << ": stopping the job"
              << (job_.checkpoint().dir().empty() ? "" : " after a checkpoint");
    coordinator_->RequestStop(reason + " by the scheduler");
  }
  void OnUsr1(petrel::NodeRuntime&) override {
    if (coordinator_ == nullptr || job_.checkpoint().dir().empty()) {
      LOG(WARNING) << "SIGUSR1: the job has no checkpoint directory";
      return;
    }
    LOG(INFO) << "SIGUSR1: taking a checkpoint";
    coordinator_->RequestCheckpoint("on_demand");
  }

 private:
  petrel::pb::JobConfig job_;
  petrel::SchedulerOptions options_;
  std::unique_ptr<petrel::Scheduler> scheduler_;
  // After scheduler_, so destroyed first: the scheduler's hook calls it.
  std::unique_ptr<petrel::WorkerRecovery> recovery_;
  // After scheduler_, so destroyed first: its thread calls scheduler_.
  std::unique_ptr<petrel::CheckpointCoordinator> coordinator_;
};

}  // namespace

int main(int argc, char** argv) {
  petrel::DaemonInfo info;
  info.name = "petrel-scheduler";
  info.role = petrel::pb::ROLE_SCHEDULER;
  info.watch_usr1 = true;
  info.usage =
      "runs the scheduler of a Petrel job.\n"
      "  petrel-scheduler --port=9000 --num_servers=S --num_workers=W";
  return petrel::RunNodeDaemon(argc, argv, info,
                               std::make_unique<SchedulerDaemon>());
}
