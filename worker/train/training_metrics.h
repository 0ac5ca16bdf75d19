// TrainingMetrics: a training worker's progress as Prometheus metrics, so
// that a dashboard can draw training curves:
//
//   petrel_train_examples_total        examples trained (counter)
//   petrel_train_batches_total         batches trained (counter)
//   petrel_train_examples_per_second   examples/s since the start (gauge)
//   petrel_train_logloss               logloss of recent batches (gauge)
//   petrel_train_epoch                 epoch of the last batch, from 1 (gauge)
//   petrel_train_position_examples     examples into that epoch of the
//                                      worker's own share (gauge)
//   petrel_eval_logloss, petrel_eval_auc   the last evaluation (gauges; NaN
//                                      until one ran on this worker)
//   petrel_eval_runs_total             evaluations run here (counter)
//
// Thread safety: thread-safe (the metrics are).
#ifndef PETREL_WORKER_TRAIN_TRAINING_METRICS_H_
#define PETREL_WORKER_TRAIN_TRAINING_METRICS_H_

#include <cstdint>

#include "base/metrics.h"

namespace petrel {

class TrainingMetrics {
 public:
  // `metrics` must outlive this object.
  explicit TrainingMetrics(MetricsRegistry* metrics);
  TrainingMetrics(const TrainingMetrics&) = delete;
  TrainingMetrics& operator=(const TrainingMetrics&) = delete;

  // One batch of `examples` trained; the rest describe the worker after it.
  // `epoch` counts from 0.
  void BatchTrained(int64_t examples, int epoch, int64_t position,
                    double examples_per_second, double window_logloss);
  void Evaluated(double logloss, double auc);

 private:
  Counter* const examples_;
  Counter* const batches_;
  Gauge* const rate_;
  Gauge* const logloss_;
  Gauge* const epoch_;
  Gauge* const position_;
  Gauge* const eval_logloss_;
  Gauge* const eval_auc_;
  Counter* const eval_runs_;
};

}  // namespace petrel

#endif  // PETREL_WORKER_TRAIN_TRAINING_METRICS_H_
