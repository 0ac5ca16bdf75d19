#include "worker/early_stopping.h"

#include <cmath>

#include "absl/strings/str_cat.h"

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
  pb::EarlyStoppingConfig* es = job->mutable_train()->mutable_early_stopping();
  if (es->patience() == 0) es->set_patience(3);
  if (es->patience() < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "train.early_stopping.patience = ", es->patience(), " must be >= 1"));
  }
  if (!std::isfinite(es->min_delta()) || es->min_delta() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("train.early_stopping.min_delta = ", es->min_delta(),
                     " must be finite and >= 0"));
  }
  const pb::DataConfig& data = job->data();
  if (es->metric() != pb::EarlyStoppingConfig::METRIC_NONE &&
      data.validation().empty() && data.validation_fraction() == 0) {
    return absl::InvalidArgumentError(
        "train.early_stopping needs validation data: set data.validation "
        "(files) or data.validation_fraction");
  }
  return absl::OkStatus();
}

}  // namespace petrel
