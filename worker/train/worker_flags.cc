#include "worker/train/worker_flags.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gflags/gflags.h"

#include "base/flag_check.h"
#include "job/job_flags.h"

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

namespace petrel {
namespace {

std::vector<std::string> SplitFiles(const std::string& flag) {
  if (flag.empty()) return {};
  return absl::StrSplit(flag, ',');
}

}  // namespace

WorkerDaemonOptions WorkerDaemonOptionsFromFlags() {
  WorkerDaemonOptions o;
  o.job = FLAGS_job;
  o.config_path = FLAGS_config;
  o.train_files = SplitFiles(FLAGS_train);
  o.test_files = SplitFiles(FLAGS_test);
  o.epochs = FLAGS_epochs;
  o.batch_size = FLAGS_batch_size;
  if (FlagIsSet("skip_malformed")) o.skip_malformed = FLAGS_skip_malformed;
  o.worker_progress = FLAGS_worker_progress;
  o.device = FLAGS_device;
  o.checkpoint_dir = FLAGS_checkpoint_dir;
  o.restore_from = FLAGS_restore_from;
  o.rounds = FLAGS_rounds;
  o.num_keys = FLAGS_num_keys;
  o.inflight = FLAGS_inflight;
  o.timeout_s = FLAGS_timeout_s;
  return o;
}

absl::StatusOr<std::unique_ptr<NodeDaemon>> WorkerDaemonFromFlags() {
  return NewWorkerDaemon(WorkerDaemonOptionsFromFlags());
}

}  // namespace petrel
