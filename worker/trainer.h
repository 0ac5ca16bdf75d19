// Trainer: the worker side of a training job. For each batch of its share
// of the training data it reads, collects the unique keys, pulls their rows
// (the next batch's pull is in flight while the current batch computes),
// runs the model forward and backward, pushes the gradients and advances its
// clock (bounded-delay consistency is enforced by the servers). It prints a
// progress line every few seconds; after the last epoch worker 0 evaluates
// the model on the test files and prints the final summary line:
//   final test_logloss=0.4563 test_auc=0.7871 examples_per_s=812345
//   train_examples=1000000
//
// Thread safety: Run is called once, from one thread.
#ifndef PETREL_WORKER_TRAINER_H_
#define PETREL_WORKER_TRAINER_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"

#include "proto/job.pb.h"
#include "van/postoffice.h"

namespace petrel {

struct TrainerOptions {
  pb::JobConfig job;
  // Longest wait on a peer (pull, barrier). Default 10 minutes.
  absl::Duration timeout = absl::Minutes(10);
  // Receives each output line (progress, summary). Default: stdout.
  std::function<void(const std::string& line)> print;
};

struct TrainResult {
  int64_t train_examples = 0;  // this worker's
  double train_seconds = 0;
  double train_logloss = 0;  // this worker's running logloss at the end
  // Worker 0 only (after evaluation):
  double test_logloss = 0;
  double test_auc = 0;
  int64_t test_examples = 0;
  int64_t total_train_examples = 0;  // all workers
  double examples_per_s = 0;         // all workers
};

// Applies the documented defaults of job.proto's training fields
// (batch_size, epochs, progress interval, fm_dim, device) and checks the values
// the trainer uses; InvalidArgument names the field.
absl::Status ResolveTrainDefaults(pb::JobConfig* job);

// Trains on `postoffice`'s cluster (joined, a worker). Returns what it
// measured; errors: InvalidArgument/DataLoss from the data, DeadlineExceeded
// naming the server that did not answer, Aborted when the job was stopped.
absl::StatusOr<TrainResult> RunTrainer(const TrainerOptions& options,
                                       Postoffice* postoffice);

}  // namespace petrel

#endif  // PETREL_WORKER_TRAINER_H_
