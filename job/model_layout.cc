#include "job/model_layout.h"

#include "absl/strings/str_cat.h"

#include "job/crosses_config.h"

namespace petrel {

int EmbeddingDim(const pb::ModelConfig& model) {
  return model.embedding_dim() == 0 ? 16 : model.embedding_dim();
}

std::vector<int> HiddenWidths(const pb::ModelConfig& model) {
  if (model.hidden().empty()) return {256, 128};
  return {model.hidden().begin(), model.hidden().end()};
}

absl::StatusOr<MlpLayout> MlpLayoutFromJob(const pb::JobConfig& job) {
  const pb::ModelConfig& model = job.model();
  MlpLayout layout;
  layout.embedding_dim = EmbeddingDim(model);
  if (layout.embedding_dim < 1 || layout.embedding_dim > 1024) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model.embedding_dim: ", model.embedding_dim(), " is not in 1..1024"));
  }
  if (!(model.dropout() >= 0.0f && model.dropout() < 1.0f)) {
    return absl::InvalidArgumentError(
        absl::StrCat("model.dropout: ", model.dropout(), " is not in [0, 1)"));
  }
  const std::vector<int> hidden = HiddenWidths(model);
  if (hidden.size() > 16) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model.hidden: ", hidden.size(), " layers, at most 16 allowed"));
  }
  const bool criteo = job.data().format() == pb::DataConfig::FORMAT_CRITEO;
  layout.num_fields = criteo ? kCriteoFields + EmbeddedCrossSlots(model) : 1;
  layout.num_numeric = criteo ? kCriteoNumeric : 0;
  layout.input_dim =
      static_cast<size_t>(layout.num_fields) * layout.embedding_dim +
      layout.num_numeric;
  size_t in = layout.input_dim;
  size_t offset = 0;
  for (size_t l = 0; l <= hidden.size(); ++l) {
    DenseLayerLayout layer;
    if (l < hidden.size()) {
      if (hidden[l] < 1 || hidden[l] > 65536) {
        return absl::InvalidArgumentError(absl::StrCat(
            "model.hidden[", l, "]: ", hidden[l], " is not in 1..65536"));
      }
      layer.out = static_cast<size_t>(hidden[l]);
    } else {
      layer.out = 1;
      layer.relu = false;
    }
    layer.in = in;
    layer.w_offset = offset;
    layer.b_offset = offset + layer.in * layer.out;
    offset = layer.b_offset + layer.out;
    in = layer.out;
    layout.layers.push_back(layer);
  }
  layout.num_params = offset;
  if (layout.num_params > (size_t{1} << 31)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model: the MLP has ", layout.num_params, " weights, more than 2^31"));
  }
  layout.dense_rows = (layout.num_params + kMlpRowFloats - 1) / kMlpRowFloats;
  return layout;
}

}  // namespace petrel
