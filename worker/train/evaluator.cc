#include "worker/train/evaluator.h"

#include "absl/strings/str_cat.h"

#include "base/status_macros.h"
#include "worker/data/data_options.h"
#include "worker/data/reader.h"
#include "worker/model/model_rows.h"

namespace petrel {

absl::StatusOr<EvalResult> Evaluate(const pb::JobConfig& job,
                                    KVWorker<float>* kv, Model* model,
                                    absl::Duration timeout) {
  if (job.data().test().empty()) {
    return absl::InvalidArgumentError("data.test: no test files (--test)");
  }
  PETREL_ASSIGN_OR_RETURN(ReaderOptions ro,
                          TestReaderOptions(job, model->needs_fields()));
  return EvaluateOn(ro, job.train().batch_size(), kv, model, timeout,
                    "the test files");
}

absl::StatusOr<EvalResult> EvaluateOn(const ReaderOptions& options,
                                      int batch_size, KVWorker<float>* kv,
                                      Model* model, absl::Duration timeout,
                                      const std::string& what) {
  PETREL_ASSIGN_OR_RETURN(std::unique_ptr<Reader> reader, OpenReader(options));
  KVRowSource rows(kv, timeout);
  PETREL_ASSIGN_OR_RETURN(EvalResult result,
                          ScoreReader(reader.get(), batch_size, model, &rows));
  if (result.examples == 0) {
    return absl::InvalidArgumentError(absl::StrCat(what, " hold no examples"));
  }
  return result;
}

}  // namespace petrel
