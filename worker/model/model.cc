#include "worker/model/model.h"

#include "absl/strings/str_cat.h"

#include "base/status_macros.h"
#include "kernels/fm.h"
#include "kernels/lr.h"
#include "kernels/sigmoid_cross_entropy.h"
#include "worker/model/mlp_model.h"

namespace petrel {
namespace {

// Logistic regression and FM share one implementation: FM with k = 0 is LR
// without the factor table.
// They compute on the host, whatever the job's device: the pulled rows and
// the batch are host memory, and kernels/lr.h and kernels/fm.h are CPU-only.
class FactorizationMachine : public Model {
 public:
  explicit FactorizationMachine(int k) : k_(k) {
    tables_.push_back(ModelTable{kLinearTable, 1, true});
    if (k_ > 0) tables_.push_back(ModelTable{kFactorTable, k_, false});
  }

  const std::vector<ModelTable>& tables() const override { return tables_; }

  absl::StatusOr<double> ForwardBackward(
      const ModelBatch& mb, const std::vector<absl::Span<const float>>& rows,
      std::vector<float>* probs,
      std::vector<std::vector<float>>* grads) override {
    const SparseBatchView& batch = mb.sparse;
    const absl::Span<const float> labels = mb.labels;
    size_t n = batch.num_examples();
    PETREL_RETURN_IF_ERROR(Logits(batch, rows));
    probs->resize(n);
    dlogits_.resize(n);
    double loss = 0;
    PETREL_RETURN_IF_ERROR(
        SigmoidCrossEntropy(logits_, labels, absl::MakeSpan(*probs),
                            absl::MakeSpan(dlogits_), &loss));
    grads->resize(tables_.size());
    size_t unique = rows[0].size() - 1;
    std::vector<float>& g0 = (*grads)[0];
    g0.resize(unique + 1);
    float grad_bias = 0;
    if (k_ == 0) {
      PETREL_RETURN_IF_ERROR(LrBackward(host_, batch, dlogits_,
                                        absl::MakeSpan(g0.data(), unique),
                                        &grad_bias));
    } else {
      std::vector<float>& g1 = (*grads)[1];
      g1.resize(unique * k_);
      PETREL_RETURN_IF_ERROR(FmBackward(
          host_, batch, Params(rows), sum_vx_, dlogits_,
          absl::MakeSpan(g0.data(), unique), absl::MakeSpan(g1), &grad_bias));
    }
    g0[unique] = grad_bias;
    return loss;
  }

  absl::Status Predict(const ModelBatch& mb,
                       const std::vector<absl::Span<const float>>& rows,
                       std::vector<float>* probs) override {
    const SparseBatchView& batch = mb.sparse;
    PETREL_RETURN_IF_ERROR(Logits(batch, rows));
    size_t n = batch.num_examples();
    probs->resize(n);
    dlogits_.resize(n);
    zeros_.assign(n, 0.0f);
    double loss = 0;
    return SigmoidCrossEntropy(logits_, zeros_, absl::MakeSpan(*probs),
                               absl::MakeSpan(dlogits_), &loss);
  }

 private:
  FmParams Params(const std::vector<absl::Span<const float>>& rows) const {
    FmParams p;
    size_t unique = rows[0].size() - 1;
    p.w = rows[0].subspan(0, unique);
    p.bias = rows[0][unique];
    p.k = static_cast<size_t>(k_);
    if (k_ > 0) p.v = rows[1];
    return p;
  }

  absl::Status Logits(const SparseBatchView& batch,
                      const std::vector<absl::Span<const float>>& rows) {
    if (rows.size() != tables_.size() || rows[0].empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("model needs rows of ", tables_.size(), " tables, got ",
                       rows.size()));
    }
    size_t n = batch.num_examples();
    logits_.resize(n);
    if (k_ == 0) {
      size_t unique = rows[0].size() - 1;
      return LrForward(host_, batch, rows[0].subspan(0, unique),
                       rows[0][unique], absl::MakeSpan(logits_));
    }
    sum_vx_.resize(n * k_);
    return FmForward(host_, batch, Params(rows), absl::MakeSpan(logits_),
                     absl::MakeSpan(sum_vx_));
  }

  const Device host_ = Device::Cpu();
  const int k_;
  std::vector<ModelTable> tables_;
  std::vector<float> logits_;
  std::vector<float> dlogits_;
  std::vector<float> sum_vx_;
  std::vector<float> zeros_;
};

}  // namespace

void AverageOverBatch(size_t examples, std::vector<std::vector<float>>* grads) {
  if (examples == 0) return;
  const float scale = 1.0f / static_cast<float>(examples);
  for (std::vector<float>& g : *grads) {
    for (float& x : g) x *= scale;
  }
}

absl::StatusOr<std::unique_ptr<Model>> Model::Create(const pb::JobConfig& job,
                                                     const Device& device) {
  switch (job.model().kind()) {
    case pb::ModelConfig::KIND_LR:
      return std::make_unique<FactorizationMachine>(0);
    case pb::ModelConfig::KIND_FM:
      return std::make_unique<FactorizationMachine>(
          job.model().fm_dim() == 0 ? 8 : job.model().fm_dim());
    case pb::ModelConfig::KIND_MLP:
      return CreateMlpModel(job, device);
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "model.kind: ", job.model().kind(), " is not a known kind"));
  }
}

std::vector<uint32_t> TableKeyIndex(uint32_t key_fields, size_t num_unique,
                                    absl::Span<const uint32_t> inverse,
                                    absl::Span<const uint32_t> fields) {
  std::vector<uint32_t> index(num_unique, kNotInTable);
  for (size_t j = 0; j < inverse.size(); ++j) {
    if (inverse[j] >= num_unique) continue;
    if (j < fields.size() && fields[j] >= key_fields) continue;
    index[inverse[j]] = 0;
  }
  uint32_t next = 0;
  for (uint32_t& i : index) {
    if (i != kNotInTable) i = next++;
  }
  return index;
}

std::vector<uint64_t> SparseTableKeys(const ModelTable& table,
                                      absl::Span<const uint64_t> unique,
                                      absl::Span<const uint32_t> inverse,
                                      absl::Span<const uint32_t> fields) {
  if (table.key_fields == 0) return {unique.begin(), unique.end()};
  const std::vector<uint32_t> index =
      TableKeyIndex(table.key_fields, unique.size(), inverse, fields);
  std::vector<uint64_t> keys;
  for (size_t u = 0; u < unique.size(); ++u) {
    if (index[u] != kNotInTable) keys.push_back(unique[u]);
  }
  return keys;
}

}  // namespace petrel
