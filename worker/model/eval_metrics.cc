#include "worker/model/eval_metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "glog/logging.h"

namespace petrel {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

}  // namespace

double LogLossSum(absl::Span<const float> labels,
                  absl::Span<const float> probs) {
  CHECK_EQ(labels.size(), probs.size());
  double sum = 0;
  for (size_t i = 0; i < labels.size(); ++i) {
    const double p =
        std::clamp<double>(probs[i], kLogLossEpsilon, 1 - kLogLossEpsilon);
    sum -= labels[i] > 0.5f ? std::log(p) : std::log1p(-p);
  }
  return sum;
}

double LogLoss(absl::Span<const float> labels, absl::Span<const float> probs) {
  if (labels.empty() && probs.empty()) return kNaN;
  return LogLossSum(labels, probs) / static_cast<double>(labels.size());
}

double Auc(absl::Span<const float> labels, absl::Span<const float> scores) {
  CHECK_EQ(labels.size(), scores.size());
  const size_t n = labels.size();
  // A NaN score has no rank: sorting would break the comparator's strict
  // weak order, and the tie groups below would never advance.
  for (float score : scores) {
    if (std::isnan(score)) return kNaN;
  }
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](uint32_t a, uint32_t b) { return scores[a] < scores[b]; });
  // Sum of the (1-based, tie-averaged) ranks of the positives.
  double positive_rank_sum = 0;
  int64_t positives = 0;
  for (size_t i = 0; i < n;) {
    size_t j = i + 1;
    int64_t tied_positives = labels[order[i]] > 0.5f;
    // Starts past i, so every group advances (by at least one).
    for (; j < n && scores[order[j]] == scores[order[i]]; ++j) {
      tied_positives += labels[order[j]] > 0.5f;
    }
    const double mean_rank = (static_cast<double>(i + 1) + j) / 2;
    positive_rank_sum += mean_rank * tied_positives;
    positives += tied_positives;
    i = j;
  }
  const int64_t negatives = static_cast<int64_t>(n) - positives;
  if (positives == 0 || negatives == 0) return kNaN;
  const double p = static_cast<double>(positives);
  return (positive_rank_sum - p * (p + 1) / 2) /
         (p * static_cast<double>(negatives));
}

RunningLogLoss::RunningLogLoss(int64_t window) : window_(window) {
  CHECK_GE(window, 1);
}

void RunningLogLoss::Add(absl::Span<const float> labels,
                         absl::Span<const float> probs) {
  AddSum(LogLossSum(labels, probs), static_cast<int64_t>(labels.size()));
}

void RunningLogLoss::AddSum(double loss_sum, int64_t examples) {
  CHECK_GE(examples, 0);
  if (examples == 0) return;
  chunks_.push_back({loss_sum, examples});
  window_sum_ += loss_sum;
  window_count_ += examples;
  total_sum_ += loss_sum;
  total_count_ += examples;
  while (window_count_ - chunks_.front().examples >= window_) {
    window_sum_ -= chunks_.front().loss_sum;
    window_count_ -= chunks_.front().examples;
    chunks_.pop_front();
  }
}

double RunningLogLoss::window_logloss() const {
  return window_count_ == 0 ? kNaN : window_sum_ / window_count_;
}

double RunningLogLoss::total_logloss() const {
  return total_count_ == 0 ? kNaN : total_sum_ / total_count_;
}

void RunningLogLoss::Reset() {
  chunks_.clear();
  window_sum_ = total_sum_ = 0;
  window_count_ = total_count_ = 0;
}

}  // namespace petrel
