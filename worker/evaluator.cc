#include "worker/evaluator.h"

#include "kernels/dedup.h"
#include "van/status_macros.h"
#include "worker/eval_metrics.h"
#include "worker/reader.h"

namespace petrel {

absl::StatusOr<EvalResult> Evaluate(const pb::JobConfig& job,
                                    KVWorker<float>* kv, Model* model,
                                    absl::Duration timeout) {
  if (job.data().test().empty()) {
    return absl::InvalidArgumentError("data.test: no test files (--test)");
  }
  ReaderOptions ro;
  ro.format = job.data().format() == pb::DataConfig::FORMAT_CRITEO
                  ? DataFormat::kCriteo
                  : DataFormat::kLibsvm;
  ro.files.assign(job.data().test().begin(), job.data().test().end());
  ro.skip_malformed = job.data().skip_malformed();
  PETREL_ASSIGN_OR_RETURN(std::unique_ptr<Reader> reader, OpenReader(ro));
  std::vector<float> labels, probs, batch_probs;
  std::vector<uint64_t> unique;
  std::vector<uint32_t> inverse;
  Batch batch;
  const auto& tables = model->tables();
  while (true) {
    PETREL_ASSIGN_OR_RETURN(bool more,
                            reader->Next(job.train().batch_size(), &batch));
    if (batch.size() > 0) {
      PETREL_RETURN_IF_ERROR(Dedup(batch.keys, &unique, &inverse));
      std::vector<uint64_t> with_bias(unique);
      with_bias.push_back(kBiasKey);
      SArray<Key> keys0(std::move(with_bias));
      std::vector<SArray<float>> rows(tables.size());
      std::vector<int> pulls;
      for (size_t t = 0; t < tables.size(); ++t) {
        KVRequestOptions opts;
        opts.table_id = tables[t].id;
        pulls.push_back(kv->Pull(
            tables[t].with_bias ? keys0 : keys0.Segment(0, unique.size()),
            &rows[t], opts));
      }
      std::vector<absl::Span<const float>> spans;
      for (size_t t = 0; t < tables.size(); ++t) {
        PETREL_RETURN_IF_ERROR(kv->Wait(pulls[t], timeout));
        spans.emplace_back(rows[t].data(), rows[t].size());
      }
      SparseBatchView view{batch.offsets, inverse, batch.values};
      PETREL_RETURN_IF_ERROR(model->Predict(view, spans, &batch_probs));
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
