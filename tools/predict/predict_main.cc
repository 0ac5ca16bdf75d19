// petrel-predict: scores a libsvm or Criteo file with a checkpoint's model,
// without starting a cluster (tools/predict/predictor.h).
//
//   petrel-predict --model=/ckpt/job1 --input=test.txt --output=scores.txt
//
// --model is a checkpoint directory, a checkpoint root (its newest complete
// checkpoint) or ROOT/latest. One probability per example and line goes to
// --output (written to FILE.tmp and renamed when complete; a device such as
// /dev/null is written in place), or to stdout
// without --output. Then one summary line, on stdout with --output and on
// stderr without:
//   petrel-predict: examples=200000 logloss=0.45123 auc=0.78012
//       checkpoint=/ckpt/job1/ckpt-00000003 device=cpu seconds=1.23
// (auc=nan when the labels are all of one class.)
// Exit codes: 0 done, 1 runtime failure (missing or damaged checkpoint,
// unreadable input, unwritable output), 2 bad flags.
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gflags/gflags.h"
#include "glog/logging.h"

#include "base/cli.h"
#include "base/flag_check.h"
#include "base/staged_output.h"
#include "tools/predict/predictor.h"

DEFINE_string(model, "",
              "Checkpoint directory, checkpoint root (its newest complete "
              "checkpoint) or ROOT/latest. Required.");
DEFINE_string(input, "", "libsvm or Criteo file to score. Required.");
DEFINE_string(output, "",
              "File for the scores, one per line. Default: stdout.");
DEFINE_string(format, "",
              "Input format: libsvm or criteo. Default: the training job's "
              "data.format.");
DEFINE_string(device, "auto",
              "auto (CUDA when the build has it and the machine a GPU, else "
              "the CPU), cpu or cuda.");
DEFINE_int32(batch_size, 0,
             "Examples per batch; 0..2^24. Default 0: the job's "
             "train.batch_size, as its evaluation used.");

namespace petrel {
namespace {

constexpr int kExitRuntime = 1;
constexpr int kExitUsage = 2;

int Fail(int code, const absl::Status& status) {
  std::fprintf(stderr, "petrel-predict: %s%s\n",
               std::string(status.message()).c_str(),
               code == kExitUsage ? " (see --help)" : "");
  return code;
}

int Run() {
  PredictOptions options;
  options.model = FLAGS_model;
  options.input = FLAGS_input;
  options.format = FLAGS_format;
  options.device = FLAGS_device;
  options.batch_size = FLAGS_batch_size;
  if (absl::Status s = ValidatePredictOptions(options); !s.ok()) {
    return Fail(kExitUsage, s);
  }
  const std::string tmp = StagingPath(FLAGS_output);
  std::FILE* out = stdout;
  if (!FLAGS_output.empty()) {
    out = std::fopen(tmp.c_str(), "w");
    if (out == nullptr) {
      return Fail(kExitRuntime,
                  absl::UnavailableError(absl::StrCat(
                      "cannot write ", tmp, ": ", std::strerror(errno))));
    }
  }
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<PredictResult> result = RunPredict(options, out);
  if (out != stdout) {
    const bool closed = std::fclose(out) == 0;
    if (result.ok() && !closed) {
      result = absl::UnavailableError(
          absl::StrCat("writing ", tmp, ": ", std::strerror(errno)));
    }
    if (result.ok()) {
      if (absl::Status s = CommitStaged(tmp, FLAGS_output); !s.ok()) result = s;
    }
    if (!result.ok()) DiscardStaged(tmp, FLAGS_output);
  } else if (std::fflush(stdout) != 0 && result.ok()) {
    result = absl::UnavailableError(
        absl::StrCat("writing scores to stdout: ", std::strerror(errno)));
  }
  // The options were valid: whatever failed now is a runtime failure.
  if (!result.ok()) return Fail(kExitRuntime, result.status());
  const std::chrono::duration<double> seconds =
      std::chrono::steady_clock::now() - start;
  std::fprintf(FLAGS_output.empty() ? stderr : stdout,
               "petrel-predict: examples=%lld logloss=%.5f auc=%.5f "
               "checkpoint=%s device=%s seconds=%.2f\n",
               static_cast<long long>(result->eval.examples),
               result->eval.logloss, result->eval.auc,
               result->checkpoint.c_str(), result->device.c_str(),
               seconds.count());
  return 0;
}

}  // namespace
}  // namespace petrel

int main(int argc, char** argv) {
  petrel::CliOptions cli;
  cli.name = "petrel-predict";
  cli.usage =
      "scores FILE with a checkpoint's model; prints logloss and AUC.\n"
      "  petrel-predict --model=CHECKPOINT --input=FILE [--output=FILE] "
      "[--format=libsvm|criteo] [--device=auto|cpu|cuda]\n"
      "Exit status: 0 done, 1 runtime failure, 2 bad flags.";
  if (int code = petrel::ParseCommandLine(cli, &argc, &argv); code >= 0) {
    return code;
  }
  return petrel::Run();
}
