// Predict: scoring a libsvm or Criteo file with a checkpoint's model, without
// a cluster (petrel-predict). The checkpoint's tables are loaded into memory
// (tools/predict/checkpoint_rows.h) and the file is scored by the same loop
// as the training job's evaluation (worker/model/scorer.h ScoreReader), with
// the job's batch size, so the scores are the ones the job's evaluation
// computes on the same file.
//
// Thread safety: RunPredict runs on the caller's thread.
#ifndef PETREL_TOOLS_PREDICT_PREDICTOR_H_
#define PETREL_TOOLS_PREDICT_PREDICTOR_H_

#include <cstdio>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include "worker/model/scorer.h"

namespace petrel {

struct PredictOptions {
  // A checkpoint directory, a checkpoint root or ROOT/latest
  // (tools/predict/model_dir.h). Required.
  std::string model;
  // The file to score. Required.
  std::string input;
  // "libsvm" or "criteo". Default empty: the job's data.format.
  std::string format;
  // "auto" (CUDA when the build has it and the machine a device, else the
  // CPU), "cpu" or "cuda". Default "auto".
  std::string device = "auto";
  // Examples per batch. Default 0: the job's train.batch_size (its default
  // 1024 when unset); else 1..2^24.
  int batch_size = 0;
};

// InvalidArgument naming the option for a bad value (flags: exit code 2).
absl::Status ValidatePredictOptions(const PredictOptions& options);

struct PredictResult {
  EvalResult eval;         // logloss and AUC over the file
  std::string checkpoint;  // the checkpoint directory used
  std::string device;      // where the model ran: "cpu" or "cuda:..."
};

// Scores options.input; writes one probability per example and line
// ("%.9g", enough to read back the exact float) to `scores` when non-null.
// Errors: InvalidArgument from ValidatePredictOptions, from the checkpoint's
// job config, or for a malformed input line ("FILE:LINE: ..."), or when
// the file holds no example; NotFound naming a missing checkpoint or input
// file; DataLoss naming a corrupted checkpoint file; FailedPrecondition for
// --device=cuda without a usable GPU; Unavailable when `scores` cannot be
// written.
absl::StatusOr<PredictResult> RunPredict(const PredictOptions& options,
                                         std::FILE* scores);

}  // namespace petrel

#endif  // PETREL_TOOLS_PREDICT_PREDICTOR_H_
