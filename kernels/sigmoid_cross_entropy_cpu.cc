#include <cmath>

#include "kernels/sigmoid_cross_entropy.h"
#include "kernels/sparse_batch.h"

namespace petrel {

absl::Status SigmoidCrossEntropy(absl::Span<const float> logits,
                                 absl::Span<const float> labels,
                                 absl::Span<float> probs,
                                 absl::Span<float> dlogits, double* loss_sum) {
  const size_t n = logits.size();
  if (auto s = CheckSize("labels", labels.size(), n); !s.ok()) return s;
  if (!probs.empty()) {
    if (auto s = CheckSize("probs", probs.size(), n); !s.ok()) return s;
  }
  if (!dlogits.empty()) {
    if (auto s = CheckSize("dlogits", dlogits.size(), n); !s.ok()) return s;
  }
  double loss = 0.0;
  for (size_t i = 0; i < n; ++i) {
    const float z = logits[i];
    const float y = labels[i];
    // e = exp(-|z|) is in (0, 1], so neither the loss nor p can overflow;
    // p is computed from the side whose denominator is in [1, 2].
    const float e = std::exp(-std::fabs(z));
    const float p = z >= 0.0f ? 1.0f / (1.0f + e) : e / (1.0f + e);
    loss += static_cast<double>(std::fmax(z, 0.0f) - z * y + std::log1p(e));
    if (!probs.empty()) probs[i] = p;
    if (!dlogits.empty()) dlogits[i] = p - y;
  }
  if (loss_sum != nullptr) *loss_sum = loss;
  return absl::OkStatus();
}

}  // namespace petrel
