#include "worker/model/mlp_model.h"

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

#include "base/status_macros.h"
#include "job/crosses_config.h"
#include "kernels/dense.h"
#include "kernels/device_memory.h"
#include "kernels/embedding.h"
#include "kernels/sigmoid_cross_entropy.h"
#include "worker/model/dropout_mask.h"

namespace petrel {
namespace {

// A host span seen by the device: the span itself on the CPU, a copy made
// through a pinned buffer on CUDA.
template <typename T>
struct Staged {
  PinnedArray<T> pinned;
  DeviceArray<T> device;
};

// A device span on its way back to a host vector.
struct Download {
  absl::Span<const float> pinned;
  std::vector<float>* out;
};

class MlpModel : public Model {
 public:
  MlpModel(const MlpLayout& layout, const pb::ModelConfig& config,
           const Device& device);

  const std::vector<ModelTable>& tables() const override { return tables_; }
  bool needs_fields() const override { return true; }

  absl::StatusOr<double> ForwardBackward(
      const ModelBatch& batch, const std::vector<absl::Span<const float>>& rows,
      std::vector<float>* probs,
      std::vector<std::vector<float>>* grads) override;
  absl::Status Predict(const ModelBatch& batch,
                       const std::vector<absl::Span<const float>>& rows,
                       std::vector<float>* probs) override;

 private:
  // Checks the batch and the rows against the layout and stages both.
  absl::Status Stage(const ModelBatch& batch,
                     const std::vector<absl::Span<const float>>& rows);
  // Stage's steps: the batch and rows checked against the layout (sets
  // n_, emb_unique_ and unique_), and, with crosses, the embedding part's
  // own batch (every position but the crosses', indexing the embedding
  // table's keys) uploaded.
  absl::Status CheckBatch(const ModelBatch& batch,
                          const std::vector<absl::Span<const float>>& rows);
  absl::Status StageEmbeddingPart(const ModelBatch& batch);
  // With `train`, applies the dropout masks of batch step_.
  absl::Status Forward(bool train);
  absl::Status Backward();
  absl::Status Loss(bool with_grad);
  // Copies a device span to `*out` (now on the CPU; after Synchronize on
  // CUDA, through pinned buffer `slot`).
  absl::Status Fetch(absl::Span<const float> src, size_t slot,
                     std::vector<float>* out);
  absl::Status FinishFetches();

  template <typename T>
  absl::StatusOr<absl::Span<const T>> Upload(absl::Span<const T> host,
                                             Staged<T>* staged);

  const MlpLayout layout_;
  const Pooling pooling_;
  const bool deterministic_;
  const bool wide_;
  const float dropout_;
  const uint64_t dropout_seed_;
  // Cross fields (>= layout_.num_fields) that feed the wide part only: the
  // embedding part reads the batch without them (emb_* below), and the
  // embedding table holds only the keys of fields < layout_.num_fields
  // (ModelTable::key_fields): no row is pulled or created for a cross key.
  const uint32_t wide_only_fields_;
  const Device device_;
  std::vector<ModelTable> tables_;
  size_t emb_index_ = 0;  // index of each table in tables_ / rows
  size_t mlp_index_ = 0;
  size_t wide_index_ = 0;

  // The staged batch and rows.
  size_t n_ = 0;
  size_t unique_ = 0;
  size_t emb_unique_ = 0;  // the embedding table's keys: unique_ or fewer
  Staged<uint32_t> offsets_, inverse_, fields_;
  Staged<float> values_, labels_, numeric_, emb_rows_, params_, wide_rows_;
  absl::Span<const uint32_t> d_offsets_, d_inverse_, d_fields_;
  absl::Span<const float> d_values_, d_labels_, d_numeric_, d_emb_, d_params_,
      d_wide_;
  DeviceArray<uint32_t> zero_fields_;  // the wide part's single field
  // The embedding part's view: the whole batch, or without wide-only crosses.
  std::vector<uint32_t> emb_offsets_, emb_inverse_, emb_fields_;
  std::vector<float> emb_values_;
  Staged<uint32_t> e_offsets_, e_inverse_;
  Staged<float> e_values_;
  absl::Span<const uint32_t> d_e_offsets_, d_e_inverse_;
  absl::Span<const float> d_e_values_;

  // Activations and their gradients per layer; the last layer's are the
  // logits and dlogits.
  DeviceArray<float> pooled_, dpooled_;
  std::vector<DeviceArray<float>> acts_, dacts_;
  // Per hidden layer, the dropout mask of the last training batch (host
  // memory: dropout runs on the CPU only).
  std::vector<std::vector<float>> masks_;
  uint64_t step_ = 0;  // training batches seen
  DeviceArray<float> probs_, losses_;
  DeviceArray<float> grad_params_, grad_emb_, grad_wide_;
  std::vector<PinnedArray<float>> fetch_buffers_;
  std::vector<Download> downloads_;
  std::vector<float> host_losses_;
};

MlpModel::MlpModel(const MlpLayout& layout, const pb::ModelConfig& config,
                   const Device& device)
    : layout_(layout),
      pooling_(config.pooling() == pb::ModelConfig::POOLING_MEAN
                   ? Pooling::kMean
                   : Pooling::kSum),
      deterministic_(config.deterministic()),
      wide_(config.wide()),
      dropout_(config.dropout()),
      dropout_seed_(config.dropout_seed()),
      wide_only_fields_(static_cast<uint32_t>(
          layout.num_fields > 1
              ? CrossSlots(config) - EmbeddedCrossSlots(config)
              : 0)),
      device_(device),
      zero_fields_(device),
      pooled_(device),
      dpooled_(device),
      probs_(device),
      losses_(device),
      grad_params_(device),
      grad_emb_(device),
      grad_wide_(device) {
  if (wide_) {
    wide_index_ = tables_.size();
    tables_.push_back(ModelTable{kLinearTable, 1, true, 0});
  }
  emb_index_ = tables_.size();
  tables_.push_back(ModelTable{
      kEmbeddingTable, layout.embedding_dim, false, 0,
      wide_only_fields_ > 0 ? static_cast<uint32_t>(layout.num_fields) : 0});
  mlp_index_ = tables_.size();
  tables_.push_back(
      ModelTable{kMlpTable, kMlpRowFloats, false, layout.dense_rows});
  for (Staged<uint32_t>* s :
       {&offsets_, &inverse_, &fields_, &e_offsets_, &e_inverse_}) {
    *s = Staged<uint32_t>{PinnedArray<uint32_t>(device),
                          DeviceArray<uint32_t>(device)};
  }
  for (Staged<float>* s : {&values_, &labels_, &numeric_, &emb_rows_, &params_,
                           &wide_rows_, &e_values_}) {
    *s = Staged<float>{PinnedArray<float>(device), DeviceArray<float>(device)};
  }
  for (size_t l = 0; l < layout.layers.size(); ++l) {
    acts_.emplace_back(device);
    dacts_.emplace_back(device);
  }
  masks_.resize(layout.layers.size());
}

template <typename T>
absl::StatusOr<absl::Span<const T>> MlpModel::Upload(absl::Span<const T> host,
                                                     Staged<T>* staged) {
  if (!device_.is_cuda()) return host;
  PETREL_RETURN_IF_ERROR(staged->pinned.Resize(host.size()));
  PETREL_RETURN_IF_ERROR(staged->device.Resize(host.size()));
  if (!host.empty()) {
    std::memcpy(staged->pinned.data(), host.data(), host.size() * sizeof(T));
  }
  PETREL_RETURN_IF_ERROR(
      CopyToDevice<T>(device_, staged->pinned.span(), staged->device.span()));
  return absl::Span<const T>(staged->device.span());
}

absl::Status MlpModel::CheckBatch(
    const ModelBatch& batch, const std::vector<absl::Span<const float>>& rows) {
  n_ = batch.sparse.num_examples();
  const size_t nnz = batch.sparse.nnz();
  if (rows.size() != tables_.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the MLP needs rows of ", tables_.size(), " tables, got ",
                     rows.size()));
  }
  const size_t d = static_cast<size_t>(layout_.embedding_dim);
  if (rows[emb_index_].size() % d != 0) {
    return absl::InvalidArgumentError("embedding rows are not whole rows");
  }
  emb_unique_ = rows[emb_index_].size() / d;
  unique_ = emb_unique_;
  if (wide_only_fields_ > 0) {
    // The embedding rows leave out the crosses' keys: the batch's unique
    // keys are the wide rows' (less the bias), or without a wide part as
    // many as the inverse indices reach.
    if (wide_) {
      if (rows[wide_index_].empty()) {
        return absl::InvalidArgumentError("wide rows lack the bias");
      }
      unique_ = rows[wide_index_].size() - 1;
    } else {
      unique_ = 0;
      for (uint32_t u : batch.sparse.inverse) {
        unique_ = std::max<size_t>(unique_, size_t{u} + 1);
      }
    }
  }
  PETREL_RETURN_IF_ERROR(CheckSize("MLP weights", rows[mlp_index_].size(),
                                   layout_.padded_params()));
  if (wide_) {
    PETREL_RETURN_IF_ERROR(
        CheckSize("wide rows", rows[wide_index_].size(), unique_ + 1));
  }
  PETREL_RETURN_IF_ERROR(CheckSize("labels", batch.labels.size(), n_));
  PETREL_RETURN_IF_ERROR(CheckSize("fields", batch.fields.size(), nnz));
  PETREL_RETURN_IF_ERROR(
      CheckSize("numeric features", batch.numeric.size(),
                n_ * static_cast<size_t>(layout_.num_numeric)));
  // The CUDA kernels trust indices; check them here on the host.
  PETREL_RETURN_IF_ERROR(ValidateSparseBatch(batch.sparse, unique_));
  const uint32_t num_fields = static_cast<uint32_t>(layout_.num_fields);
  for (uint32_t f : batch.fields) {
    if (f >= num_fields + wide_only_fields_) {
      return absl::InvalidArgumentError(absl::StrCat(
          "field ", f, " is out of range for ", layout_.num_fields, " fields"));
    }
  }
  return absl::OkStatus();
}

absl::Status MlpModel::StageEmbeddingPart(const ModelBatch& batch) {
  const uint32_t num_fields = static_cast<uint32_t>(layout_.num_fields);
  // The embedding part's batch: every position but the crosses', indexing
  // the embedding table's keys.
  const std::vector<uint32_t> emb_key =
      TableKeyIndex(num_fields, unique_, batch.sparse.inverse, batch.fields);
  size_t emb_keys = 0;
  for (uint32_t k : emb_key) emb_keys += k != kNotInTable;
  PETREL_RETURN_IF_ERROR(CheckSize("embedding rows", emb_unique_, emb_keys));
  emb_offsets_.assign(1, 0);
  emb_inverse_.clear();
  emb_values_.clear();
  emb_fields_.clear();
  for (size_t i = 0; i < n_; ++i) {
    for (uint32_t j = batch.sparse.offsets[i]; j < batch.sparse.offsets[i + 1];
         ++j) {
      if (batch.fields[j] >= num_fields) continue;
      emb_inverse_.push_back(emb_key[batch.sparse.inverse[j]]);
      emb_values_.push_back(batch.sparse.values[j]);
      emb_fields_.push_back(batch.fields[j]);
    }
    emb_offsets_.push_back(static_cast<uint32_t>(emb_inverse_.size()));
  }
  PETREL_ASSIGN_OR_RETURN(
      d_fields_, Upload(absl::Span<const uint32_t>(emb_fields_), &fields_));
  PETREL_ASSIGN_OR_RETURN(
      d_e_offsets_,
      Upload(absl::Span<const uint32_t>(emb_offsets_), &e_offsets_));
  PETREL_ASSIGN_OR_RETURN(
      d_e_inverse_,
      Upload(absl::Span<const uint32_t>(emb_inverse_), &e_inverse_));
  PETREL_ASSIGN_OR_RETURN(
      d_e_values_, Upload(absl::Span<const float>(emb_values_), &e_values_));
  return absl::OkStatus();
}

absl::Status MlpModel::Stage(const ModelBatch& batch,
                             const std::vector<absl::Span<const float>>& rows) {
  PETREL_RETURN_IF_ERROR(CheckBatch(batch, rows));
  const size_t nnz = batch.sparse.nnz();
  PETREL_ASSIGN_OR_RETURN(d_offsets_, Upload(batch.sparse.offsets, &offsets_));
  PETREL_ASSIGN_OR_RETURN(d_inverse_, Upload(batch.sparse.inverse, &inverse_));
  PETREL_ASSIGN_OR_RETURN(d_values_, Upload(batch.sparse.values, &values_));
  if (wide_only_fields_ == 0) {
    PETREL_ASSIGN_OR_RETURN(d_fields_, Upload(batch.fields, &fields_));
    d_e_offsets_ = d_offsets_;
    d_e_inverse_ = d_inverse_;
    d_e_values_ = d_values_;
  } else {
    PETREL_RETURN_IF_ERROR(StageEmbeddingPart(batch));
  }
  PETREL_ASSIGN_OR_RETURN(d_labels_, Upload(batch.labels, &labels_));
  PETREL_ASSIGN_OR_RETURN(d_numeric_, Upload(batch.numeric, &numeric_));
  PETREL_ASSIGN_OR_RETURN(d_emb_, Upload(rows[emb_index_], &emb_rows_));
  PETREL_ASSIGN_OR_RETURN(d_params_, Upload(rows[mlp_index_], &params_));
  if (wide_) {
    PETREL_ASSIGN_OR_RETURN(d_wide_, Upload(rows[wide_index_], &wide_rows_));
    PETREL_RETURN_IF_ERROR(zero_fields_.Resize(nnz));
    PETREL_RETURN_IF_ERROR(
        FillZero(device_, zero_fields_.data(), nnz * sizeof(uint32_t)));
  }
  return absl::OkStatus();
}

absl::Status MlpModel::Forward(bool train) {
  const size_t n = n_;
  const size_t d = static_cast<size_t>(layout_.embedding_dim);
  const size_t emb_in = static_cast<size_t>(layout_.num_fields) * d;
  const size_t num_numeric = static_cast<size_t>(layout_.num_numeric);
  PETREL_RETURN_IF_ERROR(pooled_.Resize(n * emb_in));
  FieldBatchView fb{SparseBatchView{d_e_offsets_, d_e_inverse_, d_e_values_},
                    d_fields_, static_cast<size_t>(layout_.num_fields)};
  const SparseBatchView all{d_offsets_, d_inverse_, d_values_};
  PETREL_RETURN_IF_ERROR(
      EmbeddingPoolForward(device_, fb, d_emb_, d, pooling_, pooled_.span()));
  const size_t last = layout_.layers.size() - 1;
  for (size_t l = 0; l <= last; ++l) {
    const DenseLayerLayout& layer = layout_.layers[l];
    DeviceArray<float>& y = acts_[l];
    PETREL_RETURN_IF_ERROR(y.Resize(n * layer.out));
    float beta = 0.0f;
    if (l == last && wide_) {
      // The wide logit first (LR as a one-field sum pooling of dim 1); the
      // output layer then accumulates onto it.
      FieldBatchView wb{all, zero_fields_.span(), 1};
      PETREL_RETURN_IF_ERROR(EmbeddingPoolForward(device_, wb,
                                                  d_wide_.subspan(0, unique_),
                                                  1, Pooling::kSum, y.span()));
      PETREL_RETURN_IF_ERROR(
          AddBias(device_, n, 1, d_wide_.subspan(unique_, 1), y.span()));
      beta = 1.0f;
    }
    const size_t x_cols = l == 0 ? emb_in : layer.in;
    absl::Span<const float> x =
        l == 0 ? absl::Span<const float>(pooled_.span()) : acts_[l - 1].span();
    PETREL_RETURN_IF_ERROR(Gemm(
        device_, false, false, n, layer.out, x_cols, 1.0f, x,
        d_params_.subspan(layer.w_offset, x_cols * layer.out), beta, y.span()));
    if (l == 0 && num_numeric > 0) {
      PETREL_RETURN_IF_ERROR(Gemm(
          device_, false, false, n, layer.out, num_numeric, 1.0f, d_numeric_,
          d_params_.subspan(layer.w_offset + emb_in * layer.out,
                            num_numeric * layer.out),
          1.0f, y.span()));
    }
    PETREL_RETURN_IF_ERROR(AddBias(device_, n, layer.out,
                                   d_params_.subspan(layer.b_offset, layer.out),
                                   y.span()));
    if (layer.relu) PETREL_RETURN_IF_ERROR(Relu(device_, y.span()));
    if (train && dropout_ > 0.0f && l < last) {
      // CreateMlpModel refuses dropout on CUDA, so y is host memory.
      std::vector<float>& mask = masks_[l];
      mask.resize(y.size());
      FillDropoutMask(dropout_seed_, step_, l, dropout_, absl::MakeSpan(mask));
      float* out = y.data();
      for (size_t i = 0; i < mask.size(); ++i) out[i] *= mask[i];
    }
  }
  return absl::OkStatus();
}

absl::Status MlpModel::Loss(bool with_grad) {
  const size_t last = layout_.layers.size() - 1;
  PETREL_RETURN_IF_ERROR(probs_.Resize(n_));
  PETREL_RETURN_IF_ERROR(losses_.Resize(n_));
  absl::Span<float> dlogits;
  if (with_grad) {
    PETREL_RETURN_IF_ERROR(dacts_[last].Resize(n_));
    dlogits = dacts_[last].span();
  }
  return SigmoidCrossEntropy(device_, acts_[last].span(), d_labels_,
                             probs_.span(), dlogits, losses_.span());
}

absl::Status MlpModel::Backward() {
  const size_t n = n_;
  const size_t d = static_cast<size_t>(layout_.embedding_dim);
  const size_t emb_in = static_cast<size_t>(layout_.num_fields) * d;
  const size_t num_numeric = static_cast<size_t>(layout_.num_numeric);
  const size_t last = layout_.layers.size() - 1;
  PETREL_RETURN_IF_ERROR(grad_params_.Resize(layout_.padded_params()));
  // The padding after the last bias never gets a gradient.
  PETREL_RETURN_IF_ERROR(
      FillZero(device_, grad_params_.data() + layout_.num_params,
               (layout_.padded_params() - layout_.num_params) * sizeof(float)));
  absl::Span<float> g = grad_params_.span();
  for (size_t l = last + 1; l-- > 0;) {
    const DenseLayerLayout& layer = layout_.layers[l];
    absl::Span<float> dy = dacts_[l].span();
    if (dropout_ > 0.0f && l < last) {
      // Dropped units' outputs are 0, so ReluBackward below zeroes their
      // gradient; the kept ones carry the mask's scale.
      const std::vector<float>& mask = masks_[l];
      for (size_t i = 0; i < dy.size(); ++i) dy[i] *= mask[i];
    }
    if (layer.relu) {
      PETREL_RETURN_IF_ERROR(ReluBackward(device_, acts_[l].span(), dy));
    }
    const size_t x_cols = l == 0 ? emb_in : layer.in;
    absl::Span<const float> x =
        l == 0 ? absl::Span<const float>(pooled_.span()) : acts_[l - 1].span();
    // dW = x^T dy; db = column sums of dy; dx = dy W^T.
    PETREL_RETURN_IF_ERROR(Gemm(device_, true, false, x_cols, layer.out, n,
                                1.0f, x, dy, 0.0f,
                                g.subspan(layer.w_offset, x_cols * layer.out)));
    if (l == 0 && num_numeric > 0) {
      PETREL_RETURN_IF_ERROR(Gemm(device_, true, false, num_numeric, layer.out,
                                  n, 1.0f, d_numeric_, dy, 0.0f,
                                  g.subspan(layer.w_offset + emb_in * layer.out,
                                            num_numeric * layer.out)));
    }
    PETREL_RETURN_IF_ERROR(BiasGrad(device_, n, layer.out, dy,
                                    g.subspan(layer.b_offset, layer.out)));
    DeviceArray<float>& dx = l == 0 ? dpooled_ : dacts_[l - 1];
    PETREL_RETURN_IF_ERROR(dx.Resize(n * x_cols));
    PETREL_RETURN_IF_ERROR(
        Gemm(device_, false, true, n, x_cols, layer.out, 1.0f, dy,
             d_params_.subspan(layer.w_offset, x_cols * layer.out), 0.0f,
             dx.span()));
  }
  FieldBatchView fb{SparseBatchView{d_e_offsets_, d_e_inverse_, d_e_values_},
                    d_fields_, static_cast<size_t>(layout_.num_fields)};
  const SparseBatchView all{d_offsets_, d_inverse_, d_values_};
  PETREL_RETURN_IF_ERROR(grad_emb_.Resize(emb_unique_ * d));
  PETREL_RETURN_IF_ERROR(EmbeddingPoolBackward(device_, fb, dpooled_.span(), d,
                                               pooling_, deterministic_,
                                               grad_emb_.span()));
  if (wide_) {
    FieldBatchView wb{all, zero_fields_.span(), 1};
    PETREL_RETURN_IF_ERROR(grad_wide_.Resize(unique_ + 1));
    absl::Span<float> gw = grad_wide_.span();
    PETREL_RETURN_IF_ERROR(EmbeddingPoolBackward(
        device_, wb, dacts_[last].span(), 1, Pooling::kSum, deterministic_,
        gw.subspan(0, unique_)));
    PETREL_RETURN_IF_ERROR(
        BiasGrad(device_, n, 1, dacts_[last].span(), gw.subspan(unique_, 1)));
  }
  return absl::OkStatus();
}

absl::Status MlpModel::Fetch(absl::Span<const float> src, size_t slot,
                             std::vector<float>* out) {
  out->resize(src.size());
  if (!device_.is_cuda()) {
    if (!src.empty()) std::memcpy(out->data(), src.data(), src.size() * 4);
    return absl::OkStatus();
  }
  while (fetch_buffers_.size() <= slot) fetch_buffers_.emplace_back(device_);
  PinnedArray<float>& pinned = fetch_buffers_[slot];
  PETREL_RETURN_IF_ERROR(pinned.Resize(src.size()));
  PETREL_RETURN_IF_ERROR(CopyToHost<float>(device_, src, pinned.span()));
  downloads_.push_back(Download{pinned.span(), out});
  return absl::OkStatus();
}

absl::Status MlpModel::FinishFetches() {
  PETREL_RETURN_IF_ERROR(Synchronize(device_));
  for (const Download& d : downloads_) {
    if (!d.pinned.empty()) {
      std::memcpy(d.out->data(), d.pinned.data(), d.pinned.size() * 4);
    }
  }
  downloads_.clear();
  return absl::OkStatus();
}

absl::StatusOr<double> MlpModel::ForwardBackward(
    const ModelBatch& batch, const std::vector<absl::Span<const float>>& rows,
    std::vector<float>* probs, std::vector<std::vector<float>>* grads) {
  downloads_.clear();
  PETREL_RETURN_IF_ERROR(Stage(batch, rows));
  PETREL_RETURN_IF_ERROR(Forward(true));
  PETREL_RETURN_IF_ERROR(Loss(true));
  PETREL_RETURN_IF_ERROR(Backward());
  ++step_;
  grads->resize(tables_.size());
  PETREL_RETURN_IF_ERROR(Fetch(probs_.span(), 0, probs));
  PETREL_RETURN_IF_ERROR(Fetch(losses_.span(), 1, &host_losses_));
  PETREL_RETURN_IF_ERROR(Fetch(grad_emb_.span(), 2, &(*grads)[emb_index_]));
  PETREL_RETURN_IF_ERROR(Fetch(grad_params_.span(), 3, &(*grads)[mlp_index_]));
  if (wide_) {
    PETREL_RETURN_IF_ERROR(Fetch(grad_wide_.span(), 4, &(*grads)[wide_index_]));
  }
  PETREL_RETURN_IF_ERROR(FinishFetches());
  double loss = 0;
  for (float x : host_losses_) loss += x;
  return loss;
}

absl::Status MlpModel::Predict(const ModelBatch& batch,
                               const std::vector<absl::Span<const float>>& rows,
                               std::vector<float>* probs) {
  downloads_.clear();
  PETREL_RETURN_IF_ERROR(Stage(batch, rows));
  PETREL_RETURN_IF_ERROR(Forward(false));
  PETREL_RETURN_IF_ERROR(Loss(false));
  PETREL_RETURN_IF_ERROR(Fetch(probs_.span(), 0, probs));
  return FinishFetches();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Model>> CreateMlpModel(const pb::JobConfig& job,
                                                      const Device& device) {
  PETREL_ASSIGN_OR_RETURN(MlpLayout layout, MlpLayoutFromJob(job));
  if (job.model().dropout() > 0.0f && device.is_cuda()) {
    return absl::InvalidArgumentError(
        "model.dropout: dropout runs on the CPU only; set it to 0 or train "
        "with --device=cpu");
  }
  return std::unique_ptr<Model>(
      std::make_unique<MlpModel>(layout, job.model(), device));
}

}  // namespace petrel
