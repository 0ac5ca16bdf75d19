// Models the trainer can fit: logistic regression and an order-2
// factorization machine. A model names the tables it needs and turns a
// batch plus the rows pulled for its unique keys into logits, and logits'
// gradients into gradients per unique key. The compute is kernels/'s.
//
// Row layout: table kLinearTable holds one weight per key, plus the bias as
// key kBiasKey; table kFactorTable (FM) holds k factors per key.
//
// Thread safety: a Model is not thread-safe; one per trainer thread.
#ifndef PETREL_WORKER_MODEL_H_
#define PETREL_WORKER_MODEL_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

#include "kernels/sparse_batch.h"

namespace petrel {

inline constexpr int kLinearTable = 0;
inline constexpr int kFactorTable = 1;
inline constexpr uint64_t kBiasKey = ~uint64_t{0};

struct ModelTable {
  int id = 0;
  int dim = 1;
  bool with_bias = false;  // the bias key is appended to this table's keys
};

class Model {
 public:
  // fm_dim 0 makes logistic regression; > 0 a factorization machine.
  static std::unique_ptr<Model> Create(int fm_dim);
  virtual ~Model() = default;

  virtual const std::vector<ModelTable>& tables() const = 0;

  // `rows[t]` holds the rows of table t for the batch's unique keys (and
  // the bias last when the table has one). Fills `probs` and `dlogits` for
  // each example and `grads[t]` (same layout as rows[t]); returns the
  // batch's summed logloss. Gradients are sums over the batch.
  virtual absl::StatusOr<double> ForwardBackward(
      const SparseBatchView& batch, absl::Span<const float> labels,
      const std::vector<absl::Span<const float>>& rows,
      std::vector<float>* probs, std::vector<std::vector<float>>* grads) = 0;
  // Predicts only (evaluation): fills `probs`.
  virtual absl::Status Predict(const SparseBatchView& batch,
                               const std::vector<absl::Span<const float>>& rows,
                               std::vector<float>* probs) = 0;
};

}  // namespace petrel

#endif  // PETREL_WORKER_MODEL_H_
