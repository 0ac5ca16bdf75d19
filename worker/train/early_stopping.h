// EarlyStopping: the rule of train.early_stopping (proto/job.proto). Fed
// one validation result per evaluation, it says whether the result is the
// best so far (an improvement of more than min_delta over the best) and
// whether training should stop: after `patience` evaluations in a row
// without an improvement. It remembers where the best result was seen.
//
//   EarlyStopping rule(config.early_stopping());
//   EarlyStopping::Verdict v = rule.Add(logloss, auc, epoch, batch);
//   if (v.improved) { /* checkpoint the model as the best */ }
//   if (v.stop) { /* end training */ }
//
// A NaN metric never improves. Thread safety: not thread-safe.
#ifndef PETREL_WORKER_TRAIN_EARLY_STOPPING_H_
#define PETREL_WORKER_TRAIN_EARLY_STOPPING_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"

#include "proto/job.pb.h"

namespace petrel {

class EarlyStopping {
 public:
  struct Verdict {
    bool improved = false;
    bool stop = false;
  };
  // Where the best result was seen.
  struct Best {
    double value = 0;  // of the metric
    int epoch = 0;     // 1-based
    int64_t batch = 0;
    bool seen = false;
  };

  // `config` as ResolveEarlyStopping left it (patience >= 1). With
  // METRIC_NONE, Add only tracks the best logloss and never stops.
  explicit EarlyStopping(const pb::EarlyStoppingConfig& config);

  Verdict Add(double logloss, double auc, int epoch, int64_t batch);

  bool enabled() const {
    return config_.metric() != pb::EarlyStoppingConfig::METRIC_NONE;
  }
  const Best& best() const { return best_; }
  int evaluations_since_best() const { return since_best_; }
  // "logloss" or "auc".
  std::string metric_name() const;

 private:
  const pb::EarlyStoppingConfig config_;
  Best best_;
  int since_best_ = 0;
};

// Checks validation and early stopping (job/job_check.h's
// CheckValidationConfig: InvalidArgument naming the field) and applies
// the default of train.early_stopping.patience (0 = 3).
absl::Status ResolveEarlyStopping(pb::JobConfig* job);

}  // namespace petrel

#endif  // PETREL_WORKER_TRAIN_EARLY_STOPPING_H_
