#include "worker/train/training_metrics.h"

#include <limits>

namespace petrel {

TrainingMetrics::TrainingMetrics(MetricsRegistry* metrics)
    : examples_(metrics->GetCounter("petrel_train_examples_total",
                                    "Training examples this worker trained.")),
      batches_(metrics->GetCounter("petrel_train_batches_total",
                                   "Training batches this worker trained.")),
      rate_(metrics->GetGauge(
          "petrel_train_examples_per_second",
          "Examples this worker trained per second since it started.")),
      logloss_(metrics->GetGauge("petrel_train_logloss",
                                 "Logloss of this worker's recent batches.")),
      epoch_(metrics->GetGauge("petrel_train_epoch",
                               "Epoch of the last batch trained, from 1.")),
      position_(metrics->GetGauge(
          "petrel_train_position_examples",
          "Examples trained into the current epoch of the worker's share.")),
      eval_logloss_(metrics->GetGauge(
          "petrel_eval_logloss",
          "Test logloss of the last evaluation on this worker (NaN: none).")),
      eval_auc_(metrics->GetGauge(
          "petrel_eval_auc",
          "Test AUC of the last evaluation on this worker (NaN: none).")),
      eval_runs_(metrics->GetCounter("petrel_eval_runs_total",
                                     "Evaluations this worker ran.")) {
  eval_logloss_->Set(std::numeric_limits<double>::quiet_NaN());
  eval_auc_->Set(std::numeric_limits<double>::quiet_NaN());
}

void TrainingMetrics::BatchTrained(int64_t examples, int epoch,
                                   int64_t position, double examples_per_second,
                                   double window_logloss) {
  examples_->Increment(examples);
  batches_->Increment();
  epoch_->Set(epoch + 1);
  position_->Set(static_cast<double>(position));
  rate_->Set(examples_per_second);
  logloss_->Set(window_logloss);
}

void TrainingMetrics::Evaluated(double logloss, double auc) {
  eval_logloss_->Set(logloss);
  eval_auc_->Set(auc);
  eval_runs_->Increment();
}

}  // namespace petrel
