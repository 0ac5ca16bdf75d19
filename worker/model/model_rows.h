// Pulling the rows a model needs for one batch: per table of the model,
// the batch's unique keys (plus the bias key when the table has one), or
// every key of a dense table. Shared by the trainer and the evaluator
// (which reads them through KVRowSource, a worker/model/scorer.h RowSource).
//
// Thread safety: not thread-safe; one ModelRows (or KVRowSource) per batch
// in flight.
#ifndef PETREL_WORKER_MODEL_MODEL_ROWS_H_
#define PETREL_WORKER_MODEL_MODEL_ROWS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"

#include "kv/kv_worker.h"
#include "worker/model/model.h"
#include "worker/model/scorer.h"

namespace petrel {

struct ModelRows {
  std::vector<SArray<Key>> keys;    // per model table
  std::vector<SArray<float>> rows;  // per model table, filled by the pull
  std::vector<int> pulls;           // timestamps
};

// Sends the pulls of `tables` for the batch's `unique` keys at `clock` (-1:
// unbounded); a table with key_fields pulls only the keys of its fields
// (SparseTableKeys over the batch's per-position `inverse` and `fields`).
void SendModelPulls(KVWorker<float>* kv, const std::vector<ModelTable>& tables,
                    const std::vector<uint64_t>& unique,
                    absl::Span<const uint32_t> inverse,
                    absl::Span<const uint32_t> fields, int64_t clock,
                    ModelRows* out);

// Waits for the pulls; the spans view out->rows. DeadlineExceeded naming
// the server that did not answer within `timeout`.
absl::StatusOr<std::vector<absl::Span<const float>>> WaitModelPulls(
    KVWorker<float>* kv, ModelRows* rows, absl::Duration timeout);

// A RowSource pulling through `kv` (which must outlive it) with no
// consistency bound (clock -1), each pull waited for up to `timeout`.
class KVRowSource : public RowSource {
 public:
  KVRowSource(KVWorker<float>* kv, absl::Duration timeout)
      : kv_(kv), timeout_(timeout) {}

  // DeadlineExceeded naming the server that did not answer, or the error
  // a server answered with.
  absl::StatusOr<std::vector<absl::Span<const float>>> Rows(
      const std::vector<ModelTable>& tables,
      const std::vector<uint64_t>& unique, absl::Span<const uint32_t> inverse,
      absl::Span<const uint32_t> fields) override;

 private:
  KVWorker<float>* const kv_;
  const absl::Duration timeout_;
  ModelRows rows_;  // the last batch's; the returned spans view it
};

}  // namespace petrel

#endif  // PETREL_WORKER_MODEL_MODEL_ROWS_H_
