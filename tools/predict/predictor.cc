#include "tools/predict/predictor.h"

#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

#include "base/status_macros.h"
#include "job/criteo.h"
#include "job/crosses_config.h"
#include "kernels/device.h"
#include "tools/predict/checkpoint_rows.h"
#include "tools/predict/model_dir.h"
#include "worker/data/cross_selection.h"
#include "worker/data/reader.h"
#include "worker/model/model.h"
#include "worker/train/trainer.h"

namespace petrel {
namespace {

// The crosses the checkpoint's workers recorded that they selected
// (WorkerPosition.crosses); nullopt when none did (a checkpoint from before
// they were recorded). InvalidArgument when two workers' differ.
absl::StatusOr<std::optional<pb::SelectedCrosses>> RecordedCrosses(
    const pb::CheckpointManifest& manifest) {
  std::optional<pb::SelectedCrosses> recorded;
  int first = -1;
  for (const pb::WorkerPosition& w : manifest.workers()) {
    if (!w.has_crosses()) continue;
    if (!recorded.has_value()) {
      recorded = w.crosses();
      first = w.rank();
    } else if (w.crosses().SerializeAsString() !=
               recorded->SerializeAsString()) {
      return absl::InvalidArgumentError(
          absl::StrCat("the checkpoint's workers ", first, " and ", w.rank(),
                       " recorded different selected crosses"));
    }
  }
  return recorded;
}

// The job the checkpoint was trained with, as its trainer resolved it, with
// the options' format.
absl::StatusOr<pb::JobConfig> PredictJob(const pb::CheckpointManifest& manifest,
                                         const PredictOptions& options) {
  pb::JobConfig job = manifest.job();
  if (options.format == "libsvm") {
    job.mutable_data()->set_format(pb::DataConfig::FORMAT_LIBSVM);
  } else if (options.format == "criteo") {
    job.mutable_data()->set_format(pb::DataConfig::FORMAT_CRITEO);
  }
  // The crosses the workers selected, as they recorded them; a checkpoint
  // from before they were recorded: selected again, as every worker did,
  // from the same rows of the training files.
  PETREL_ASSIGN_OR_RETURN(std::optional<pb::SelectedCrosses> recorded,
                          RecordedCrosses(manifest));
  if (SelectsCrosses(job.model()) && recorded.has_value()) {
    *job.mutable_model()->mutable_crosses()->mutable_pairs() =
        recorded->pairs();
  } else if (SelectsCrosses(job.model()) &&
             job.data().format() == pb::DataConfig::FORMAT_CRITEO) {
    LOG(INFO) << "the checkpoint does not record the selected crosses (it "
                 "predates that); selecting them again from its training "
                 "files";
    if (job.data().train().empty()) {
      return absl::FailedPreconditionError(
          "the checkpoint's job selects model.crosses from its training "
          "files, but names none");
    }
    PETREL_RETURN_IF_ERROR(Annotate(
        SelectCrossesForJob(&job).status(),
        "selecting model.crosses again from the checkpoint's training files"));
  }
  // ResolveTrainDefaults checks the training files are named; scoring
  // reads none, so any name does.
  if (job.data().train().empty()) job.mutable_data()->add_train(options.input);
  PETREL_RETURN_IF_ERROR(
      Annotate(ResolveTrainDefaults(&job), "the checkpoint's job config"));
  if (options.batch_size > 0) {
    job.mutable_train()->set_batch_size(options.batch_size);
  }
  return job;
}

ReaderOptions InputReaderOptions(const pb::JobConfig& job,
                                 const std::string& input, bool with_fields) {
  ReaderOptions ro;
  ro.format = job.data().format() == pb::DataConfig::FORMAT_CRITEO
                  ? DataFormat::kCriteo
                  : DataFormat::kLibsvm;
  ro.files = {input};
  ro.skip_malformed = job.data().skip_malformed();
  ro.with_fields = ro.with_numeric = with_fields;
  ro.crosses = CrossPairs(job.model());
  ro.cross_base_fields = kCriteoFields;
  return ro;
}

}  // namespace

absl::Status ValidatePredictOptions(const PredictOptions& options) {
  if (options.model.empty()) {
    return absl::InvalidArgumentError(
        "--model is required (a checkpoint directory or root)");
  }
  if (options.input.empty()) {
    return absl::InvalidArgumentError(
        "--input is required (the file to score)");
  }
  if (!options.format.empty() && options.format != "libsvm" &&
      options.format != "criteo") {
    return absl::InvalidArgumentError(
        absl::StrCat("--format=", options.format, " is not libsvm or criteo"));
  }
  if (options.batch_size < 0 || options.batch_size > (1 << 24)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--batch_size=", options.batch_size, " is not in 0..2^24"));
  }
  absl::StatusOr<DeviceChoice> device = ParseDeviceChoice(options.device);
  if (!device.ok()) return Annotate(device.status(), "--device");
  return absl::OkStatus();
}

absl::StatusOr<PredictResult> RunPredict(const PredictOptions& options,
                                         std::FILE* scores) {
  PETREL_RETURN_IF_ERROR(ValidatePredictOptions(options));
  PETREL_ASSIGN_OR_RETURN(ModelDir model_dir, OpenModelDir(options.model));
  PETREL_ASSIGN_OR_RETURN(pb::JobConfig job,
                          PredictJob(model_dir.manifest, options));
  PETREL_ASSIGN_OR_RETURN(DeviceChoice choice,
                          ParseDeviceChoice(options.device));
  PETREL_ASSIGN_OR_RETURN(std::unique_ptr<ComputeDevice> device,
                          ComputeDevice::Open(choice));
  PETREL_ASSIGN_OR_RETURN(std::unique_ptr<Model> model,
                          Model::Create(job, device->device()));
  PETREL_ASSIGN_OR_RETURN(
      std::unique_ptr<CheckpointRows> rows,
      CheckpointRows::Load(model_dir.dir, model_dir.manifest));
  PETREL_ASSIGN_OR_RETURN(std::unique_ptr<Reader> reader,
                          OpenReader(InputReaderOptions(
                              job, options.input, model->needs_fields())));
  ScoreSink sink;
  if (scores != nullptr) {
    sink = [scores](absl::Span<const float>, absl::Span<const float> probs) {
      for (float p : probs) {
        if (std::fprintf(scores, "%.9g\n", p) < 0) {
          return absl::UnavailableError(
              absl::StrCat("writing scores: ", std::strerror(errno)));
        }
      }
      return absl::OkStatus();
    };
  }
  PredictResult result;
  PETREL_ASSIGN_OR_RETURN(result.eval,
                          ScoreReader(reader.get(), job.train().batch_size(),
                                      model.get(), rows.get(), sink));
  if (result.eval.examples == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(options.input, " holds no examples"));
  }
  result.checkpoint = model_dir.dir;
  result.device = device->device().name();
  return result;
}

}  // namespace petrel
