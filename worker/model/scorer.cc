#include "worker/model/scorer.h"

#include "base/status_macros.h"
#include "kernels/dedup.h"
#include "worker/data/batch.h"
#include "worker/model/eval_metrics.h"

namespace petrel {

absl::StatusOr<EvalResult> ScoreReader(Reader* reader, int batch_size,
                                       Model* model, RowSource* rows,
                                       const ScoreSink& sink) {
  std::vector<float> labels, probs, batch_probs;
  std::vector<uint64_t> unique;
  std::vector<uint32_t> inverse;
  Batch batch;
  while (true) {
    PETREL_ASSIGN_OR_RETURN(bool more, reader->Next(batch_size, &batch));
    if (batch.size() > 0) {
      PETREL_RETURN_IF_ERROR(Dedup(batch.keys, &unique, &inverse));
      PETREL_ASSIGN_OR_RETURN(
          std::vector<absl::Span<const float>> spans,
          rows->Rows(model->tables(), unique, inverse, batch.fields));
      ModelBatch mb;
      mb.sparse = SparseBatchView{batch.offsets, inverse, batch.values};
      mb.labels = batch.labels;
      mb.fields = batch.fields;
      mb.numeric = batch.numeric;
      PETREL_RETURN_IF_ERROR(model->Predict(mb, spans, &batch_probs));
      if (sink) PETREL_RETURN_IF_ERROR(sink(batch.labels, batch_probs));
      labels.insert(labels.end(), batch.labels.begin(), batch.labels.end());
      probs.insert(probs.end(), batch_probs.begin(), batch_probs.end());
    }
    if (!more) break;
  }
  EvalResult result;
  result.examples = static_cast<int64_t>(labels.size());
  result.logloss = LogLoss(labels, probs);
  result.auc = Auc(labels, probs);
  return result;
}

}  // namespace petrel
