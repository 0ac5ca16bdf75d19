// The built-in worker as a NodeDaemon (node/node_daemon.h): joins the
// cluster as a worker, runs one job and reports it on stdout. petrel-worker
// runs it (roles/worker_main.cc).
//
// Jobs:
//   check  Pushes (rank + 1) to keys 0..num_keys-1 for `rounds` rounds,
//          meets the other workers at a barrier, pulls every key and checks
//          the exact sum rounds * W * (W + 1) / 2 (worker/train/check_job.h).
//          Prints "check rank=R keys=N rounds=K ok=true".
//   train  Trains the model of a job config on this worker's share of the
//          training files; worker 0 evaluates on the test files and prints
//          "final test_logloss=... test_auc=... examples_per_s=...". Takes
//          part in checkpoints (job/checkpoint_protocol.h) and in recovery
//          from worker failures (job/recovery_protocol.h); restore_from
//          continues from a checkpoint's worker position.
//
// Interrupt during training asks the scheduler to stop the job (after a
// checkpoint when the job has a checkpoint directory).
//
// Thread safety: as NodeDaemon.
#ifndef PETREL_WORKER_TRAIN_WORKER_DAEMON_H_
#define PETREL_WORKER_TRAIN_WORKER_DAEMON_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"

#include "node/node_daemon.h"

namespace petrel {

struct WorkerDaemonOptions {
  // "check" or "train"; anything else is refused by CheckFlags.
  // Default "check".
  std::string job = "check";

  // train: the job config file (protobuf text format). Default empty.
  std::string config_path;
  // train: override data.train / data.test when not empty (each entry one
  // file or pattern, as the config's). Default empty.
  std::vector<std::string> train_files;
  std::vector<std::string> test_files;
  // train: override train.epochs / train.batch_size when > 0; negative is
  // refused. Default 0.
  int epochs = 0;
  int batch_size = 0;
  // train: overrides data.skip_malformed when set. Default unset.
  std::optional<bool> skip_malformed;
  // train: print this worker's own progress line. Default false.
  bool worker_progress = false;
  // train: overrides train.device when not empty. Default empty.
  std::string device;
  // train: override checkpoint.dir / checkpoint.restore_from when not
  // empty. Default empty.
  std::string checkpoint_dir;
  std::string restore_from;

  // check: push rounds, keys and requests outstanding
  // (ValidateCheckJobOptions's ranges). Defaults 10, 1000, 4.
  int rounds = 10;
  int num_keys = 1000;
  int inflight = 4;

  // Deadline of every wait: each request, the barrier and the end of the
  // job, in seconds (1..86400). Default 60.
  int timeout_s = 60;
};

std::unique_ptr<NodeDaemon> NewWorkerDaemon(const WorkerDaemonOptions& options);

}  // namespace petrel

#endif  // PETREL_WORKER_TRAIN_WORKER_DAEMON_H_
