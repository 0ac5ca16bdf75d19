#include "worker/evaluator.h"

#include "base/status_macros.h"
#include "kernels/dedup.h"
#include "worker/data_options.h"
#include "worker/eval_metrics.h"
#include "worker/model_rows.h"
#include "worker/reader.h"

namespace petrel {

absl::StatusOr<EvalResult> Evaluate(const pb::JobConfig& job,
                                    KVWorker<float>* kv, Model* model,
                                    absl::Duration timeout) {
  if (job.data().test().empty()) {
    return absl::InvalidArgumentError("data.test: no test files (--test)");
  }
  PETREL_ASSIGN_OR_RETURN(ReaderOptions ro,
                          TestReaderOptions(job, model->needs_fields()));
  PETREL_ASSIGN_OR_RETURN(std::unique_ptr<Reader> reader, OpenReader(ro));
  std::vector<float> labels, probs, batch_probs;
  std::vector<uint64_t> unique;
  std::vector<uint32_t> inverse;
  Batch batch;
  ModelRows rows;
  while (true) {
    PETREL_ASSIGN_OR_RETURN(bool more,
                            reader->Next(job.train().batch_size(), &batch));
    if (batch.size() > 0) {
      PETREL_RETURN_IF_ERROR(Dedup(batch.keys, &unique, &inverse));
      SendModelPulls(kv, model->tables(), unique, -1, &rows);
      PETREL_ASSIGN_OR_RETURN(std::vector<absl::Span<const float>> spans,
                              WaitModelPulls(kv, &rows, timeout));
      ModelBatch mb;
      mb.sparse = SparseBatchView{batch.offsets, inverse, batch.values};
      mb.labels = batch.labels;
      mb.fields = batch.fields;
      mb.numeric = batch.numeric;
      PETREL_RETURN_IF_ERROR(model->Predict(mb, spans, &batch_probs));
      labels.insert(labels.end(), batch.labels.begin(), batch.labels.end());
      probs.insert(probs.end(), batch_probs.begin(), batch_probs.end());
    }
    if (!more) break;
  }
  if (labels.empty()) {
    return absl::InvalidArgumentError("the test files hold no examples");
  }
  EvalResult result;
  result.examples = static_cast<int64_t>(labels.size());
  result.logloss = LogLoss(labels, probs);
  result.auc = Auc(labels, probs);
  return result;
}

}  // namespace petrel
