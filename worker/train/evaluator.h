// Evaluation of a model on a job's test files: reads every test example,
// pulls the rows it needs (no consistency bound), predicts, and computes
// logloss and AUC over all of them. The loop is worker/model/scorer.h's
// ScoreReader, which petrel-predict runs on a checkpoint's rows too.
//
// Thread safety: call from the trainer's thread.
#ifndef PETREL_WORKER_TRAIN_EVALUATOR_H_
#define PETREL_WORKER_TRAIN_EVALUATOR_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

#include "kv/kv_worker.h"
#include "proto/job.pb.h"
#include "worker/data/reader.h"
#include "worker/model/model.h"
#include "worker/model/scorer.h"

namespace petrel {

// Evaluates `model` with rows pulled through `kv` on job.data().test(), in
// batches of job.train().batch_size(). InvalidArgument when there are no
// test files or no test examples.
absl::StatusOr<EvalResult> Evaluate(const pb::JobConfig& job,
                                    KVWorker<float>* kv, Model* model,
                                    absl::Duration timeout);

// The same on the examples `options` reads (e.g. ValidationReaderOptions),
// named `what` in the error when there are none.
absl::StatusOr<EvalResult> EvaluateOn(const ReaderOptions& options,
                                      int batch_size, KVWorker<float>* kv,
                                      Model* model, absl::Duration timeout,
                                      const std::string& what);

}  // namespace petrel

#endif  // PETREL_WORKER_TRAIN_EVALUATOR_H_
