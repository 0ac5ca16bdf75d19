#include "worker/train/worker_daemon.h"

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "glog/logging.h"

#include "base/config_file.h"
#include "base/status_macros.h"
#include "checkpoint/checkpoint_dir.h"
#include "checkpoint/start_checkpoint.h"
#include "job/checkpoint_protocol.h"
#include "job/job_check.h"
#include "kv/kv_worker.h"
#include "node/node_runtime.h"
#include "worker/data/data_files.h"
#include "worker/data/data_options.h"
#include "worker/train/check_job.h"
#include "worker/train/recovery_client.h"
#include "worker/train/trainer.h"
#include "worker/train/worker_control.h"

namespace petrel {
namespace {

// The job config of a train job: the file's, with the options' overrides,
// its data files expanded and its defaults resolved.
absl::StatusOr<pb::JobConfig> TrainConfig(const WorkerDaemonOptions& o) {
  pb::JobConfig job;
  if (!o.config_path.empty()) {
    absl::Status s = ParseTextProtoFile(o.config_path, &job);
    if (!s.ok()) return s;
  }
  if (!o.train_files.empty()) {
    job.mutable_data()->clear_train();
    for (const std::string& f : o.train_files) job.mutable_data()->add_train(f);
  }
  if (!o.test_files.empty()) {
    job.mutable_data()->clear_test();
    for (const std::string& f : o.test_files) job.mutable_data()->add_test(f);
  }
  if (o.epochs < 0 || o.batch_size < 0) {
    return absl::InvalidArgumentError("--epochs and --batch_size must be >= 0");
  }
  if (o.epochs > 0) job.mutable_train()->set_epochs(o.epochs);
  if (o.skip_malformed.has_value()) {
    job.mutable_data()->set_skip_malformed(*o.skip_malformed);
  }
  if (o.batch_size > 0) job.mutable_train()->set_batch_size(o.batch_size);
  if (!o.device.empty()) job.mutable_train()->set_device(o.device);
  if (!o.checkpoint_dir.empty()) {
    job.mutable_checkpoint()->set_dir(o.checkpoint_dir);
  }
  if (!o.restore_from.empty()) {
    job.mutable_checkpoint()->set_restore_from(o.restore_from);
  }
  absl::Status s = ExpandDataFiles(&std::getenv, job.mutable_data());
  if (!s.ok()) return s;
  s = ResolveTrainDefaults(&job);
  if (!s.ok()) return s;
  // Here, not in ResolveTrainDefaults: petrel-predict resolves a
  // checkpoint's config where its training files need not exist.
  s = CheckTrainFiles(job);
  if (!s.ok()) return s;
  return job;
}

absl::StatusOr<CheckJobOptions> CheckOptions(const WorkerDaemonOptions& o) {
  CheckJobOptions options;
  options.num_keys = o.num_keys;
  options.rounds = o.rounds;
  options.inflight = o.inflight;
  options.timeout = absl::Seconds(o.timeout_s);
  absl::Status s = ValidateCheckJobOptions(options);
  if (!s.ok()) return s;
  return options;
}

// Joins, trains and ends the worker's part of the cluster.
absl::Status RunTrain(NodeRuntime& runtime, const pb::JobConfig& job,
                      const WorkerDaemonOptions& o, WorkerControl* control,
                      RecoveryClient* recovery, const StartCheckpoint& start) {
  absl::Status s = control->Start();
  if (s.ok()) s = recovery->Start();
  if (s.ok()) s = runtime.Start();
  if (!s.ok()) return s;
  TrainerOptions options;
  options.job = job;
  options.timeout = absl::Seconds(o.timeout_s);
  options.control = control;
  options.recovery = recovery;
  options.wait_for_servers = !start.dir.empty();
  options.worker_progress_lines = o.worker_progress;
  if (start.restore) {
    const int rank = runtime.postoffice()->my_rank();
    for (const pb::WorkerPosition& p : start.manifest.workers()) {
      if (p.rank() == rank) options.resume = p;
    }
    if (!options.resume.has_value()) {
      return absl::InvalidArgumentError(
          absl::StrCat("the checkpoint has no position for worker ", rank));
    }
  }
  absl::StatusOr<TrainResult> result =
      RunTrainer(options, runtime.postoffice());
  if (!result.ok()) {
    // Not a death the job should survive: it fails now, with the reason
    // (unless it was stopped, or has ended already).
    Postoffice* po = runtime.postoffice();
    if (!absl::IsAborted(result.status()) && !po->nodes().empty() &&
        absl::IsDeadlineExceeded(po->WaitForTerminate(absl::ZeroDuration()))) {
      recovery->ReportFailure(std::string(result.status().message()),
                              absl::Seconds(5));
    }
    return result.status();
  }
  // The scheduler takes the final checkpoint before it ends the job.
  return runtime.postoffice()->Finish(
      job.checkpoint().dir().empty() ? options.timeout
                                     : options.timeout + kCheckpointAllowance);
}

// Joins, runs the check job and ends the worker's part of the cluster.
absl::Status RunCheck(NodeRuntime& runtime, const CheckJobOptions& options) {
  Postoffice* po = runtime.postoffice();
  KVWorker<float> kv(/*app_id=*/0, /*customer_id=*/0, po);
  absl::Status s = kv.Start();
  if (s.ok()) s = runtime.Start();
  if (!s.ok()) return s;
  absl::StatusOr<std::string> line = RunCheckJob(po, &kv, options);
  if (!line.ok()) return line.status();
  std::printf("%s\n", line->c_str());
  std::fflush(stdout);
  return po->Finish(options.timeout);
}

class WorkerDaemon : public NodeDaemon {
 public:
  explicit WorkerDaemon(const WorkerDaemonOptions& options)
      : options_(options) {}

  absl::Status CheckFlags(const NodeSettings& settings) override {
    if (options_.job != "check" && options_.job != "train") {
      return absl::InvalidArgumentError(absl::StrCat(
          "--job: unknown job '", options_.job, "' (jobs: check, train)"));
    }
    if (options_.timeout_s < 1 || options_.timeout_s > 86400) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--timeout_s: ", options_.timeout_s, " is not in 1..86400"));
    }
    if (options_.job == "check") {
      check_ = CheckOptions(options_);
      return check_.status();
    }
    job_ = TrainConfig(options_);
    if (!job_.ok()) return job_.status();
    absl::Status checked = CheckJobConfig(
        *job_, settings.postoffice.num_servers, PhysicalMemoryBytes());
    if (!checked.ok()) {
      return options_.config_path.empty()
                 ? checked
                 : Annotate(checked, options_.config_path);
    }
    restore_ = FindStartCheckpoint(job_->checkpoint(),
                                   settings.postoffice.num_workers);
    return restore_.status();
  }

  absl::Status Build(NodeRuntime& runtime) override {
    if (options_.job == "train") {
      control_ = std::make_unique<WorkerControl>(runtime.postoffice());
      recovery_ = std::make_unique<RecoveryClient>(runtime.postoffice());
    }
    return absl::OkStatus();
  }

  absl::Status Run(NodeRuntime& runtime) override {
    return options_.job == "check"
               ? RunCheck(runtime, *check_)
               : RunTrain(runtime, *job_, options_, control_.get(),
                          recovery_.get(), *restore_);
  }

  // Training: the scheduler stops the job (after a checkpoint when there is
  // a directory); before the cluster formed there is nobody to ask.
  void Interrupt(NodeRuntime& runtime, const std::string& reason) override {
    LOG(INFO) << reason << ": stopping";
    if (control_ != nullptr && control_->RequestStop(reason)) {
      LOG(INFO) << reason << ": asked the scheduler to stop the job";
      return;
    }
    if (control_ != nullptr) control_->StopLocally(reason);
    runtime.postoffice()->Interrupt(reason);
  }

 private:
  const WorkerDaemonOptions options_;
  std::unique_ptr<WorkerControl> control_;
  std::unique_ptr<RecoveryClient> recovery_;
  absl::StatusOr<StartCheckpoint> restore_;
  absl::StatusOr<CheckJobOptions> check_;
  absl::StatusOr<pb::JobConfig> job_;
};

}  // namespace

std::unique_ptr<NodeDaemon> NewWorkerDaemon(
    const WorkerDaemonOptions& options) {
  return std::make_unique<WorkerDaemon>(options);
}

}  // namespace petrel
