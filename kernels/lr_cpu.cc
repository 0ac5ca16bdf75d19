#include <algorithm>

#include "glog/logging.h"

#include "kernels/lr.h"

namespace petrel {

absl::Status LrForward(const SparseBatchView& batch,
                       absl::Span<const float> weights, float bias,
                       absl::Span<float> logits) {
  if (auto s = ValidateSparseBatch(batch, weights.size()); !s.ok()) return s;
  if (auto s = CheckSize("logits", logits.size(), batch.num_examples());
      !s.ok()) {
    return s;
  }
  const uint32_t* offsets = batch.offsets.data();
  const uint32_t* inverse = batch.inverse.data();
  const float* values = batch.values.data();
  const float* w = weights.data();
  for (size_t i = 0; i < logits.size(); ++i) {
    float sum = bias;
    for (uint32_t j = offsets[i]; j < offsets[i + 1]; ++j) {
      sum += w[inverse[j]] * values[j];
    }
    logits[i] = sum;
  }
  return absl::OkStatus();
}

absl::Status LrBackward(const SparseBatchView& batch,
                        absl::Span<const float> dlogits,
                        absl::Span<float> grad_weights, float* grad_bias) {
  CHECK(grad_bias != nullptr);
  if (auto s = ValidateSparseBatch(batch, grad_weights.size()); !s.ok()) {
    return s;
  }
  if (auto s = CheckSize("dlogits", dlogits.size(), batch.num_examples());
      !s.ok()) {
    return s;
  }
  std::fill(grad_weights.begin(), grad_weights.end(), 0.0f);
  const uint32_t* offsets = batch.offsets.data();
  const uint32_t* inverse = batch.inverse.data();
  const float* values = batch.values.data();
  float* g = grad_weights.data();
  double bias_sum = 0.0;
  for (size_t i = 0; i < dlogits.size(); ++i) {
    const float d = dlogits[i];
    bias_sum += d;
    for (uint32_t j = offsets[i]; j < offsets[i + 1]; ++j) {
      g[inverse[j]] += d * values[j];
    }
  }
  *grad_bias = static_cast<float>(bias_sum);
  return absl::OkStatus();
}

}  // namespace petrel
