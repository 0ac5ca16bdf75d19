// Models the trainer can fit: logistic regression, an order-2
// factorization machine and embeddings + MLP (worker/model/mlp_model.h). A
// model names the tables it needs and turns a batch plus the rows pulled for
// its unique keys into logits, and logits' gradients into gradients per unique
// key. The compute is kernels/'s.
//
// Row layout: table kLinearTable holds one weight per key, plus the bias as
// key kBiasKey; table kFactorTable (FM) holds k factors per key.
//
// Thread safety: a Model is not thread-safe; one per trainer thread.
#ifndef PETREL_WORKER_MODEL_MODEL_H_
#define PETREL_WORKER_MODEL_MODEL_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

#include "job/model_layout.h"
#include "kernels/device.h"
#include "kernels/sparse_batch.h"
#include "proto/job.pb.h"

namespace petrel {

inline constexpr uint64_t kBiasKey = ~uint64_t{0};

struct ModelTable {
  int id = 0;
  int dim = 1;
  bool with_bias = false;  // the bias key is appended to this table's keys
  // A dense table: pull and push keys 0 .. dense_keys-1 (all of it) instead
  // of the batch's unique keys. 0 for a sparse table.
  uint64_t dense_keys = 0;
  // A sparse table that only holds the keys of fields 0 .. key_fields-1:
  // its keys for a batch are those of `unique` that a position of such a
  // field refers to (TableKeyIndex). 0: every unique key of the batch.
  uint32_t key_fields = 0;
};

inline constexpr uint32_t kNotInTable = ~uint32_t{0};

// For a table with key_fields > 0: per index of the batch's `num_unique`
// unique keys, its index in the table's keys (which keep the unique keys'
// order), or kNotInTable when only positions of fields >= key_fields refer
// to it. `inverse` and `fields` are per position; positions past either's
// end count as fields < key_fields (a batch without fields is not
// filtered). Inverse entries >= num_unique are ignored.
std::vector<uint32_t> TableKeyIndex(uint32_t key_fields, size_t num_unique,
                                    absl::Span<const uint32_t> inverse,
                                    absl::Span<const uint32_t> fields);

// The keys of sparse table `table` for a batch: `unique` when
// table.key_fields is 0, else those TableKeyIndex keeps (no bias key).
std::vector<uint64_t> SparseTableKeys(const ModelTable& table,
                                      absl::Span<const uint64_t> unique,
                                      absl::Span<const uint32_t> inverse,
                                      absl::Span<const uint32_t> fields);

// What a model reads of a batch (host memory).
struct ModelBatch {
  SparseBatchView sparse;             // offsets, inverse, values
  absl::Span<const float> labels;     // one per example
  absl::Span<const uint32_t> fields;  // per position; models that need it
  absl::Span<const float> numeric;    // examples x num_numeric; ditto
};

class Model {
 public:
  // The model of `job` (model.kind and its fields; data.format decides the
  // MLP's fields and numeric features), computing on `device` (which must
  // outlive the model). InvalidArgument for an invalid model config.
  static absl::StatusOr<std::unique_ptr<Model>> Create(const pb::JobConfig& job,
                                                       const Device& device);
  virtual ~Model() = default;

  virtual const std::vector<ModelTable>& tables() const = 0;
  // Whether the batch must carry fields and numeric features.
  virtual bool needs_fields() const { return false; }

  // `rows[t]` holds the rows of table t for the batch's unique keys (and
  // the bias last when the table has one), or all rows of a dense table.
  // Fills `probs` and `dlogits` for each example and `grads[t]` (same
  // layout as rows[t]); returns the batch's summed logloss. Gradients are
  // sums over the batch (the trainer averages them: AverageOverBatch).
  virtual absl::StatusOr<double> ForwardBackward(
      const ModelBatch& batch, const std::vector<absl::Span<const float>>& rows,
      std::vector<float>* probs, std::vector<std::vector<float>>* grads) = 0;
  // Predicts only (evaluation): fills `probs`.
  virtual absl::Status Predict(const ModelBatch& batch,
                               const std::vector<absl::Span<const float>>& rows,
                               std::vector<float>* probs) = 0;
};

// Turns the summed gradients of ForwardBackward into the gradients of the
// batch's MEAN logloss, as the trainer pushes them: every value is divided
// by `examples`, the number of examples in the batch. For a sparse key that
// appears in several examples (or several times in one), its gradient is
// the sum of its per-example gradients divided by the batch size, not by
// its number of occurrences: an example without the key contributes zero.
// The same holds for the bias, the embedding rows and the dense layers, so
// one SGD learning rate means the same step at every batch size.
void AverageOverBatch(size_t examples, std::vector<std::vector<float>>* grads);

}  // namespace petrel

#endif  // PETREL_WORKER_MODEL_MODEL_H_
