// petrel-worker: the host for Petrel's built-in worker jobs. It joins the
// cluster as a worker, runs one job and reports it on stdout.
//
//   petrel-worker --scheduler=HOST:PORT [--job=check] [--rounds=10]
//       [--num_keys=1000] [--inflight=4] [--timeout_s=60]
//
// Jobs:
//   check  Pushes (rank + 1) to keys 0..num_keys-1 for --rounds rounds, meets
//          the other workers at a barrier, pulls every key and checks the
//          exact sum rounds * W * (W + 1) / 2 (see worker/check_job.h).
//          Prints "check rank=R keys=N rounds=K ok=true".
//   train  Trains the model of a job config (--config=FILE; --train,
//          --test, --epochs, --batch_size override it) on this worker's share
//          of the training files; worker 0 evaluates on the test files and
//          prints "final test_logloss=... test_auc=... examples_per_s=...".
//          Takes part in checkpoints (job/checkpoint_protocol.h) and in
//          recovery from worker failures (job/recovery_protocol.h);
//          --restore_from continues from a checkpoint's worker position.
//
// Started with DMLC_ROLE=scheduler or DMLC_ROLE=server, as PS-Lite's
// launchers start one program in every role, it runs the built-in scheduler
// or server instead (roles/built_in_roles.h), with the same flags as
// petrel-scheduler and petrel-server.
//
// SIGTERM/SIGINT during training asks the scheduler to stop the job (after
// a checkpoint when the job has a checkpoint directory); a second signal
// ends the worker at once.
//
// Exit codes: 0 the job passed and the cluster ended cleanly; 1 a runtime
// failure (a wrong sum, a deadline, a failed job, SIGTERM/SIGINT: one line
// on stderr says which); 2 bad flags or configuration.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gflags/gflags.h"
#include "glog/logging.h"

#include "base/config_file.h"
#include "base/flag_check.h"
#include "base/status_macros.h"
#include "checkpoint/checkpoint_dir.h"
#include "checkpoint/start_checkpoint.h"
#include "job/checkpoint_protocol.h"
#include "job/job_check.h"
#include "job/job_flags.h"
#include "kv/kv_worker.h"
#include "roles/built_in_roles.h"
#include "van/daemon_main.h"
#include "worker/check_job.h"
#include "worker/data_files.h"
#include "worker/data_options.h"
#include "worker/recovery_client.h"
#include "worker/trainer.h"
#include "worker/worker_control.h"

DEFINE_string(job, "check", "Job to run: check or train. Default check.");
DEFINE_string(train, "",
              "train: training files, comma-separated; overrides data.train.");
DEFINE_string(test, "",
              "train: test files, comma-separated; overrides data.test.");
DEFINE_int32(epochs, 0, "train: epochs; overrides train.epochs when > 0.");
DEFINE_int32(batch_size, 0,
             "train: examples per batch; overrides train.batch_size when > 0.");
DEFINE_bool(skip_malformed, false,
            "train: skip (and count) malformed data lines instead of failing "
            "with the file and line; overrides data.skip_malformed when set.");
DEFINE_bool(worker_progress, false,
            "train: print this worker's own progress line every "
            "train.progress_interval_s (the scheduler prints the job's "
            "merged line). Default false.");
DEFINE_string(device, "",
              "train: where to compute: auto (a GPU when the build has CUDA "
              "and the machine a device, else the CPU), cpu or cuda (fails "
              "without a GPU); overrides train.device. Default: the "
              "config's, else auto.");
DEFINE_int32(rounds, 10,
             "check: push rounds (>= 1; rounds * W * (W + 1) / 2 < 2^24). "
             "Default 10.");
DEFINE_int32(num_keys, 1000,
             "check: keys 0..num_keys-1 (1..2^24). Default 1000.");
DEFINE_int32(inflight, 4,
             "check: push requests outstanding at once (1..1024). Default 4.");
DEFINE_int32(timeout_s, 60,
             "Deadline in seconds of every wait: each request, the barrier "
             "and the end of the job (1..86400). Default 60.");

namespace {

absl::StatusOr<petrel::pb::JobConfig> TrainConfigFromFlags() {
  petrel::pb::JobConfig job;
  if (!FLAGS_config.empty()) {
    absl::Status s = petrel::ParseTextProtoFile(FLAGS_config, &job);
    if (!s.ok()) return s;
  }
  if (!FLAGS_train.empty()) {
    job.mutable_data()->clear_train();
    for (absl::string_view f : absl::StrSplit(FLAGS_train, ',')) {
      job.mutable_data()->add_train(std::string(f));
    }
  }
  if (!FLAGS_test.empty()) {
    job.mutable_data()->clear_test();
    for (absl::string_view f : absl::StrSplit(FLAGS_test, ',')) {
      job.mutable_data()->add_test(std::string(f));
    }
  }
  if (FLAGS_epochs < 0 || FLAGS_batch_size < 0) {
    return absl::InvalidArgumentError("--epochs and --batch_size must be >= 0");
  }
  if (FLAGS_epochs > 0) job.mutable_train()->set_epochs(FLAGS_epochs);
  if (petrel::FlagIsSet("skip_malformed")) {
    job.mutable_data()->set_skip_malformed(FLAGS_skip_malformed);
  }
  if (FLAGS_batch_size > 0)
    job.mutable_train()->set_batch_size(FLAGS_batch_size);
  if (!FLAGS_device.empty()) job.mutable_train()->set_device(FLAGS_device);
  if (!FLAGS_checkpoint_dir.empty()) {
    job.mutable_checkpoint()->set_dir(FLAGS_checkpoint_dir);
  }
  if (!FLAGS_restore_from.empty()) {
    job.mutable_checkpoint()->set_restore_from(FLAGS_restore_from);
  }
  absl::Status s = petrel::ExpandDataFiles(&std::getenv, job.mutable_data());
  if (!s.ok()) return s;
  s = petrel::ResolveTrainDefaults(&job);
  if (!s.ok()) return s;
  // Here, not in ResolveTrainDefaults: petrel-predict resolves a
  // checkpoint's config where its training files need not exist.
  s = petrel::CheckTrainFiles(job);
  if (!s.ok()) return s;
  return job;
}

absl::StatusOr<petrel::CheckJobOptions> JobOptionsFromFlags() {
  if (FLAGS_timeout_s < 1 || FLAGS_timeout_s > 86400) {
    return absl::InvalidArgumentError(
        absl::StrCat("--timeout_s: ", FLAGS_timeout_s, " is not in 1..86400"));
  }
  petrel::CheckJobOptions options;
  options.num_keys = FLAGS_num_keys;
  options.rounds = FLAGS_rounds;
  options.inflight = FLAGS_inflight;
  options.timeout = absl::Seconds(FLAGS_timeout_s);
  absl::Status s = petrel::ValidateCheckJobOptions(options);
  if (!s.ok()) return s;
  return options;
}

// Joins, trains and ends the worker's part of the cluster.
absl::Status RunTrain(petrel::NodeRuntime& runtime,
                      const petrel::pb::JobConfig& job,
                      petrel::WorkerControl* control,
                      petrel::RecoveryClient* recovery,
                      const petrel::StartCheckpoint& start) {
  absl::Status s = control->Start();
  if (s.ok()) s = recovery->Start();
  if (s.ok()) s = runtime.Start();
  if (!s.ok()) return s;
  petrel::TrainerOptions options;
  options.job = job;
  options.timeout = absl::Seconds(FLAGS_timeout_s);
  options.control = control;
  options.recovery = recovery;
  options.wait_for_servers = !start.dir.empty();
  options.worker_progress_lines = FLAGS_worker_progress;
  if (start.restore) {
    const int rank = runtime.postoffice()->my_rank();
    for (const petrel::pb::WorkerPosition& p : start.manifest.workers()) {
      if (p.rank() == rank) options.resume = p;
    }
    if (!options.resume.has_value()) {
      return absl::InvalidArgumentError(
          absl::StrCat("the checkpoint has no position for worker ", rank));
    }
  }
  absl::StatusOr<petrel::TrainResult> result =
      petrel::RunTrainer(options, runtime.postoffice());
  if (!result.ok()) {
    // Not a death the job should survive: it fails now, with the reason
    // (unless it was stopped, or has ended already).
    petrel::Postoffice* po = runtime.postoffice();
    if (!absl::IsAborted(result.status()) && !po->nodes().empty() &&
        absl::IsDeadlineExceeded(po->WaitForTerminate(absl::ZeroDuration()))) {
      recovery->ReportFailure(std::string(result.status().message()),
                              absl::Seconds(5));
    }
    return result.status();
  }
  // The scheduler takes the final checkpoint before it ends the job.
  return runtime.postoffice()->Finish(job.checkpoint().dir().empty()
                                          ? options.timeout
                                          : options.timeout +
                                                petrel::kCheckpointAllowance);
}

// Joins, runs the job and ends the worker's part of the cluster.
absl::Status RunWorker(petrel::NodeRuntime& runtime,
                       const petrel::CheckJobOptions& options) {
  petrel::Postoffice* po = runtime.postoffice();
  petrel::KVWorker<float> kv(/*app_id=*/0, /*customer_id=*/0, po);
  absl::Status s = kv.Start();
  if (s.ok()) s = runtime.Start();
  if (!s.ok()) return s;
  absl::StatusOr<std::string> line = petrel::RunCheckJob(po, &kv, options);
  if (!line.ok()) return line.status();
  std::printf("%s\n", line->c_str());
  std::fflush(stdout);
  return po->Finish(options.timeout);
}

class WorkerDaemon : public petrel::NodeDaemon {
 public:
  absl::Status CheckFlags(const petrel::NodeSettings& settings) override {
    if (FLAGS_job != "check" && FLAGS_job != "train") {
      return absl::InvalidArgumentError(absl::StrCat(
          "--job: unknown job '", FLAGS_job, "' (jobs: check, train)"));
    }
    if (FLAGS_timeout_s < 1 || FLAGS_timeout_s > 86400) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--timeout_s: ", FLAGS_timeout_s, " is not in 1..86400"));
    }
    if (FLAGS_job == "check") {
      options_ = JobOptionsFromFlags();
      return options_.status();
    }
    job_ = TrainConfigFromFlags();
    if (!job_.ok()) return job_.status();
    absl::Status checked = petrel::CheckJobConfig(
        *job_, settings.postoffice.num_servers, petrel::PhysicalMemoryBytes());
    if (!checked.ok()) {
      return FLAGS_config.empty() ? checked
                                  : petrel::Annotate(checked, FLAGS_config);
    }
    restore_ = petrel::FindStartCheckpoint(job_->checkpoint(),
                                           settings.postoffice.num_workers);
    return restore_.status();
  }
  absl::Status Build(petrel::NodeRuntime& runtime) override {
    if (FLAGS_job == "train") {
      control_ = std::make_unique<petrel::WorkerControl>(runtime.postoffice());
      recovery_ =
          std::make_unique<petrel::RecoveryClient>(runtime.postoffice());
    }
    return absl::OkStatus();
  }
  absl::Status Run(petrel::NodeRuntime& runtime) override {
    return FLAGS_job == "check" ? RunWorker(runtime, *options_)
                                : RunTrain(runtime, *job_, control_.get(),
                                           recovery_.get(), *restore_);
  }
  // Training: the scheduler stops the job (after a checkpoint when there is
  // a directory); before the cluster formed there is nobody to ask.
  void Interrupt(petrel::NodeRuntime& runtime,
                 const std::string& reason) override {
    LOG(INFO) << reason << ": stopping";
    if (control_ != nullptr && control_->RequestStop(reason)) {
      LOG(INFO) << reason << ": asked the scheduler to stop the job";
      return;
    }
    if (control_ != nullptr) control_->StopLocally(reason);
    runtime.postoffice()->Interrupt(reason);
  }

 private:
  std::unique_ptr<petrel::WorkerControl> control_;
  std::unique_ptr<petrel::RecoveryClient> recovery_;
  absl::StatusOr<petrel::StartCheckpoint> restore_;
  absl::StatusOr<petrel::CheckJobOptions> options_;
  absl::StatusOr<petrel::pb::JobConfig> job_;
};

}  // namespace

int main(int argc, char** argv) {
  petrel::DaemonInfo info;
  info.name = "petrel-worker";
  info.role = petrel::pb::ROLE_WORKER;
  info.usage =
      "runs a built-in Petrel worker job.\n"
      "  petrel-worker --scheduler=HOST:PORT [--job=check] [--rounds=10] "
      "[--num_keys=1000]";
  info.make_daemon = [] {
    return absl::StatusOr<std::unique_ptr<petrel::NodeDaemon>>(
        std::make_unique<WorkerDaemon>());
  };
  // Started with DMLC_ROLE=scheduler or server (PS-Lite's launchers), it
  // runs the built-in scheduler or server.
  info.other_role = &petrel::BuiltInDaemonFromFlags;
  return petrel::RunNodeDaemon(argc, argv, info);
}
