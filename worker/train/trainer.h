// Trainer: the worker side of a training job. For each batch of its share
// of the training data it reads, collects the unique keys, pulls their rows
// (the next batch's pull is in flight while the current batch computes),
// runs the model forward and backward, pushes the gradients and advances its
// clock (bounded-delay consistency is enforced by the servers). It reports
// its progress to the scheduler, which prints the job's merged progress
// line. Worker 0 evaluates on the validation data during training and
// applies early stopping (worker/train/validator.h); after the last epoch (or
// the early stop) it evaluates the model on the test files and prints
// the final summary line:
//   final test_logloss=0.4563 test_auc=0.7871 examples_per_s=812345
//   train_examples=1000000
// With train.early_stopping it also names where the best validation
// result was (the model a "best" checkpoint keeps):
//   ... early_stopped=1 kept_epoch=2 kept_batch=40 best_valid_logloss=0.45
//
// Worker failures (options.recovery): the trainer reads batches round
// robin from every piece of data it holds (its own share first, then the
// pieces the scheduler reassigned from dead workers), reports its
// progress every kProgressInterval, and when everything is trained leaves
// the clock and asks the scheduler for more (kDone). Pieces that arrive
// after it left the clock are trained outside bounded delay (pulls with
// clock -1). The final line then also names the dead workers:
//   ... dead_workers=2 redistributed=14336 trained_twice=1024
//
// Checkpoints (options.control): at each batch boundary, and while waiting
// for a pull, a requested pause is taken once the pushes sent so far are
// acknowledged (job/checkpoint_protocol.h). Worker 0 asks the scheduler for
// a checkpoint every checkpoint.every_batches batches and, with
// checkpoint.at_epoch_end, when an epoch ends.
//
// Thread safety: Run is called once, from one thread.
#ifndef PETREL_WORKER_TRAIN_TRAINER_H_
#define PETREL_WORKER_TRAIN_TRAINER_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"

#include "cluster/postoffice.h"
#include "proto/checkpoint.pb.h"
#include "proto/job.pb.h"
#include "worker/train/recovery_client.h"
#include "worker/train/train_defaults.h"
#include "worker/train/worker_control.h"

namespace petrel {

struct TrainerOptions {
  pb::JobConfig job;
  // Longest wait on a peer (pull, barrier). Default 10 minutes.
  absl::Duration timeout = absl::Minutes(10);
  // Receives each output line (progress, summary). Default: stdout.
  std::function<void(const std::string& line)> print;
  // The worker's end of the checkpoint protocol, started before the node
  // joined; must outlive the run. Default null: no checkpoints, no
  // graceful stop.
  WorkerControl* control = nullptr;
  // The worker's end of the recovery protocol (job/recovery_protocol.h),
  // started before the node joined; must outlive the run. With it the job
  // survives the death of other workers: this worker reports its progress,
  // trains the data reassigned to it and, at the end, the lowest live rank
  // evaluates. Default null: every worker must live to the end.
  RecoveryClient* recovery = nullptr;
  // Continue from this position of a checkpoint (restore): the epoch and
  // the examples of it already trained are skipped, the clock and the
  // trained-example count continue. Default none: from the beginning.
  std::optional<pb::WorkerPosition> resume;
  // Print this worker's own progress line every
  // train.progress_interval_s ("progress worker=R ..."). Default false: the
  // scheduler prints the job's merged line (scheduler/job_progress.h).
  bool worker_progress_lines = false;
  // Meet the servers at a barrier of every server and worker before the
  // first pull (they load a checkpoint first: restore or warm start).
  // Every node of the job must agree. Default false.
  bool wait_for_servers = false;
  // Set by RunTrainer when the worker selected job.model.crosses.pairs
  // (worker/data/cross_selection.h): Position() then records them.
  bool crosses_selected = false;
};

struct TrainResult {
  // This worker's, including those trained before a restore.
  int64_t train_examples = 0;
  double train_seconds = 0;
  double train_logloss = 0;  // this worker's running logloss at the end
  // The evaluating worker only (worker 0, or the lowest live rank when
  // workers died), after evaluation:
  double test_logloss = 0;
  double test_auc = 0;
  int64_t test_examples = 0;
  int64_t total_train_examples = 0;  // all workers
  double examples_per_s = 0;         // all workers
};

// Trains on `postoffice`'s cluster (joined, a worker). Returns what it
// measured; errors: InvalidArgument/DataLoss from the data, DeadlineExceeded
// naming the server that did not answer, Aborted when the job was stopped
// (the scheduler's reason, e.g. a graceful stop after a signal).
absl::StatusOr<TrainResult> RunTrainer(const TrainerOptions& options,
                                       Postoffice* postoffice);

}  // namespace petrel

#endif  // PETREL_WORKER_TRAIN_TRAINER_H_
