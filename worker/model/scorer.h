// Scoring examples with a model: the one loop shared by the trainer's
// evaluation (worker/train/evaluator.h, rows pulled from the servers) and
// petrel-predict (rows read from a checkpoint). For each batch of the reader
// it deduplicates the keys, asks a RowSource for the model's rows of the
// unique keys, runs Model::Predict and hands the probabilities on; at the end
// it computes logloss and AUC (worker/model/eval_metrics.h) over every example.
//
// Because both callers run this function with the same batch size, the same
// reader and the same rows, they compute the same scores.
//
// Thread safety: ScoreReader runs on the caller's thread; a RowSource is
// used by one thread at a time.
#ifndef PETREL_WORKER_MODEL_SCORER_H_
#define PETREL_WORKER_MODEL_SCORER_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

#include "worker/data/reader.h"
#include "worker/model/model.h"

namespace petrel {

struct EvalResult {
  double logloss = 0;  // NaN when there were no examples
  double auc = 0;      // NaN unless there were positives and negatives
  int64_t examples = 0;
};

// Where a model's rows come from, batch by batch.
class RowSource {
 public:
  virtual ~RowSource() = default;

  // The rows of each of `tables` (Model::tables()) for the batch's sorted
  // unique keys `unique`, laid out as Model::Predict reads them: rows[t]
  // holds table t's dim floats per key of `unique` (per key of
  // SparseTableKeys for a table with key_fields; `inverse` and `fields` are
  // the batch's, per position), then the bias key's row
  // when the table has one; a dense table's every row. A key without a row
  // gets the row its table's initializer gives it (server/initializer.h),
  // as a server's pull does. The spans stay valid until the next call.
  virtual absl::StatusOr<std::vector<absl::Span<const float>>> Rows(
      const std::vector<ModelTable>& tables,
      const std::vector<uint64_t>& unique, absl::Span<const uint32_t> inverse,
      absl::Span<const uint32_t> fields) = 0;
};

// Receives each batch's labels and probabilities, in the reader's order.
// An error stops the scoring and is returned.
using ScoreSink = std::function<absl::Status(absl::Span<const float> labels,
                                             absl::Span<const float> probs)>;

// Scores every example `reader` returns, in batches of `batch_size` (>= 1)
// examples, with `model` on the rows `rows` gives; calls `sink` (may be
// null) per batch. Returns the metrics over all examples (examples = 0 when
// the reader had none). Errors: the reader's, the row source's, the model's
// and the sink's.
absl::StatusOr<EvalResult> ScoreReader(Reader* reader, int batch_size,
                                       Model* model, RowSource* rows,
                                       const ScoreSink& sink = nullptr);

}  // namespace petrel

#endif  // PETREL_WORKER_MODEL_SCORER_H_
