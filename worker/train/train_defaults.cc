#include "worker/train/train_defaults.h"

#include "absl/strings/str_cat.h"

#include "base/status_macros.h"
#include "job/model_layout.h"
#include "kernels/device.h"
#include "worker/data/data_options.h"
#include "worker/train/early_stopping.h"

namespace petrel {

absl::Status ResolveTrainDefaults(pb::JobConfig* job) {
  pb::TrainConfig* t = job->mutable_train();
  if (t->batch_size() == 0) t->set_batch_size(1024);
  if (t->epochs() == 0) t->set_epochs(1);
  if (t->progress_interval_s() == 0) t->set_progress_interval_s(2.0f);
  if (job->model().fm_dim() == 0) job->mutable_model()->set_fm_dim(8);
  if (t->batch_size() < 1 || t->batch_size() > (1 << 24)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "train.batch_size = ", t->batch_size(), " is not in 1..2^24"));
  }
  if (t->epochs() < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("train.epochs = ", t->epochs(), " must be >= 1"));
  }
  if (t->eval_every_batches() < 0 || t->progress_interval_s() < 0) {
    return absl::InvalidArgumentError(
        "train.eval_every_batches and train.progress_interval_s must be >= 0");
  }
  if (job->model().fm_dim() < 1 || job->model().fm_dim() > 1024) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model.fm_dim = ", job->model().fm_dim(), " is not in 1..1024"));
  }
  if (t->device().empty()) t->set_device("auto");
  absl::StatusOr<DeviceChoice> device = ParseDeviceChoice(t->device());
  if (!device.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("train.device: ", device.status().message()));
  }
  if (job->model().kind() == pb::ModelConfig::KIND_MLP) {
    PETREL_RETURN_IF_ERROR(MlpLayoutFromJob(*job).status());
  }
  PETREL_RETURN_IF_ERROR(CheckValidationFiles(*job));
  PETREL_RETURN_IF_ERROR(ResolveEarlyStopping(job));
  PETREL_RETURN_IF_ERROR(TrainReaderOptions(*job, 0, 1, false).status());
  return absl::OkStatus();
}

}  // namespace petrel
