#include "worker/train/early_stopping.h"

#include <cmath>

#include "base/status_macros.h"
#include "job/job_check.h"

namespace petrel {

EarlyStopping::EarlyStopping(const pb::EarlyStoppingConfig& config)
    : config_(config) {}

std::string EarlyStopping::metric_name() const {
  return config_.metric() == pb::EarlyStoppingConfig::METRIC_AUC ? "auc"
                                                                 : "logloss";
}

EarlyStopping::Verdict EarlyStopping::Add(double logloss, double auc, int epoch,
                                          int64_t batch) {
  const bool higher_is_better =
      config_.metric() == pb::EarlyStoppingConfig::METRIC_AUC;
  const double value = higher_is_better ? auc : logloss;
  Verdict verdict;
  // NaN compares false: it never improves.
  const double delta = config_.min_delta();
  const bool better = !best_.seen
                          ? !std::isnan(value)
                          : (higher_is_better ? value > best_.value + delta
                                              : value < best_.value - delta);
  if (better) {
    best_ = Best{value, epoch, batch, true};
    since_best_ = 0;
    verdict.improved = true;
  } else {
    ++since_best_;
  }
  verdict.stop = enabled() && since_best_ >= config_.patience();
  return verdict;
}

absl::Status ResolveEarlyStopping(pb::JobConfig* job) {
  PETREL_RETURN_IF_ERROR(CheckValidationConfig(*job));
  pb::EarlyStoppingConfig* es = job->mutable_train()->mutable_early_stopping();
  if (es->patience() == 0) es->set_patience(3);
  return absl::OkStatus();
}

}  // namespace petrel
