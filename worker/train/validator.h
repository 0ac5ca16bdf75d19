// Validator: worker 0's evaluations during training (docs/training.md,
// "Validation and early stopping"). At the points the trainer calls it
// (every train.eval_every_batches of worker 0's batches and at the end of
// each of its epochs) it evaluates the live model on the validation set
// (data.validation, or the examples data.validation_fraction holds out;
// without one, on data.test), prints one line, reports the result to the
// scheduler (for the progress CSV) and applies train.early_stopping:
//   - an improvement asks the scheduler for a checkpoint with reason
//     "best" (when the job has a checkpoint directory), which retention
//     keeps (scheduler/checkpoint_coordinator.h);
//   - `patience` evaluations without one stop the training: the report
//     carries stop_training and the scheduler tells every worker.
// The trainer then pauses worker 0 for that checkpoint before it trains
// on, so the kept checkpoint holds worker 0 where it was evaluated; other
// workers may have trained on meanwhile, at most the bounded delay (one
// batch with BSP) ahead.
//
// Thread safety: call from the trainer's thread.
#ifndef PETREL_WORKER_TRAIN_VALIDATOR_H_
#define PETREL_WORKER_TRAIN_VALIDATOR_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

#include "kv/kv_worker.h"
#include "proto/job.pb.h"
#include "worker/model/model.h"
#include "worker/model/scorer.h"
#include "worker/train/early_stopping.h"
#include "worker/train/recovery_client.h"
#include "worker/train/worker_control.h"

namespace petrel {

struct ValidatorOptions {
  // With defaults resolved (ResolveTrainDefaults); must outlive the
  // Validator.
  const pb::JobConfig* job = nullptr;
  KVWorker<float>* kv = nullptr;  // worker 0's, started
  Model* model = nullptr;
  // Default null: results are not reported and early stopping stops this
  // worker only.
  RecoveryClient* recovery = nullptr;
  // Default null: no "best" checkpoints.
  WorkerControl* control = nullptr;
  std::function<void(const std::string& line)> print;  // required
  absl::Duration timeout = absl::Minutes(10);
};

class Validator {
 public:
  explicit Validator(ValidatorOptions options);

  // Evaluates now: `epoch` is worker 0's 1-based epoch, `batch` its
  // batches trained. Returns true when training must stop (early
  // stopping). Errors of the evaluation (e.g. no validation examples).
  absl::StatusOr<bool> Evaluate(int epoch, int64_t batch);

  // " early_stopped=1 kept_epoch=E kept_batch=B best_valid_logloss=..."
  // for the final line when early stopping is on, else "".
  std::string Summary() const;
  bool stopped() const { return stopped_; }
  // A "best" checkpoint was asked for by the last Evaluate: the trainer
  // takes its pause at once, so that the checkpoint holds worker 0 where
  // it was evaluated.
  bool checkpoint_requested() const { return checkpoint_requested_; }
  // The last Evaluate's result (zeros before the first).
  const EvalResult& last_eval() const { return last_eval_; }

 private:
  const ValidatorOptions options_;
  const bool validation_;  // else data.test
  EarlyStopping rule_;
  bool stopped_ = false;
  bool checkpoint_requested_ = false;
  int64_t last_batch_ = -1;
  EvalResult last_eval_;
};

}  // namespace petrel

#endif  // PETREL_WORKER_TRAIN_VALIDATOR_H_
