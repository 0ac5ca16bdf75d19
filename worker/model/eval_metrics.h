// Evaluation metrics for binary classifiers: log loss, exact ROC AUC, and a
// running log loss over a window of recent batches for progress lines.
//
// Labels are 0/1 (a label > 0.5 counts as positive). Thread safety: the
// functions are pure; RunningLogLoss is not thread-safe.
#ifndef PETREL_WORKER_MODEL_EVAL_METRICS_H_
#define PETREL_WORKER_MODEL_EVAL_METRICS_H_

#include <cstdint>
#include <deque>

#include "absl/types/span.h"

namespace petrel {

// Probabilities are clamped to [kLogLossEpsilon, 1 - kLogLossEpsilon].
inline constexpr double kLogLossEpsilon = 1e-15;

// Sum over examples of -log(p) for positives and -log(1 - p) for negatives,
// with p clamped. REQUIRES: labels.size() == probs.size().
double LogLossSum(absl::Span<const float> labels,
                  absl::Span<const float> probs);

// Mean log loss; NaN for no examples or a NaN probability. REQUIRES:
// equal sizes.
double LogLoss(absl::Span<const float> labels, absl::Span<const float> probs);

// Exact area under the ROC curve: the probability that a random positive
// scores above a random negative, ties counting one half (sort and average
// tied ranks, O(n log n)). NaN unless there are both positives and
// negatives or when a score is NaN (infinite scores rank as usual). Ends
// on every input. REQUIRES: equal sizes.
double Auc(absl::Span<const float> labels, absl::Span<const float> scores);

// Log loss over roughly the last `window` examples, at batch granularity:
// whole batches are kept, the oldest dropped while the rest still cover
// `window` examples. Also keeps the total since construction or Reset().
class RunningLogLoss {
 public:
  // window >= 1; default 100000 examples.
  explicit RunningLogLoss(int64_t window = 100000);

  // Adds one batch. REQUIRES: equal sizes.
  void Add(absl::Span<const float> labels, absl::Span<const float> probs);
  // Adds one batch given its summed log loss (for callers whose kernels
  // already computed it). REQUIRES: examples >= 0.
  void AddSum(double loss_sum, int64_t examples);

  // Mean over the window; NaN when empty.
  double window_logloss() const;
  int64_t window_examples() const { return window_count_; }
  // Mean over everything added; NaN when empty.
  double total_logloss() const;
  int64_t total_examples() const { return total_count_; }

  void Reset();

 private:
  struct Chunk {
    double loss_sum;
    int64_t examples;
  };
  const int64_t window_;
  std::deque<Chunk> chunks_;
  double window_sum_ = 0;
  int64_t window_count_ = 0;
  double total_sum_ = 0;
  int64_t total_count_ = 0;
};

}  // namespace petrel

#endif  // PETREL_WORKER_MODEL_EVAL_METRICS_H_
