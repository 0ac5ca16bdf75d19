// The CPU logistic regression (kernels/internal/lr_cpu.h).
#include "kernels/internal/lr_cpu.h"

#include <algorithm>

namespace petrel {
namespace internal {

void LrForwardCpu(const SparseBatchView& batch, absl::Span<const float> weights,
                  float bias, absl::Span<float> logits) {
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
}

float LrBackwardCpu(const SparseBatchView& batch,
                    absl::Span<const float> dlogits,
                    absl::Span<float> grad_weights) {
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
  return static_cast<float>(bias_sum);
}

}  // namespace internal
}  // namespace petrel
