#include "worker/evaluator.h"

#include "base/status_macros.h"
#include "worker/data_options.h"
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
  KVRowSource rows(kv, timeout);
  PETREL_ASSIGN_OR_RETURN(
      EvalResult result,
      ScoreReader(reader.get(), job.train().batch_size(), model, &rows));
  if (result.examples == 0) {
    return absl::InvalidArgumentError("the test files hold no examples");
  }
  return result;
}

}  // namespace petrel
