#include "kernels/internal/sigmoid_cross_entropy_cpu.h"

#include <cmath>

#include "base/status_macros.h"
#include "kernels/sigmoid_cross_entropy.h"
#include "kernels/sparse_batch.h"

namespace petrel {
namespace {

// The stable form of the header: e = exp(-|z|) is in (0, 1], so neither the
// loss nor p can overflow; p is computed from the side whose denominator is
// in [1, 2]. Returns the loss and sets *p.
inline float StableLoss(float z, float y, float* p) {
  const float e = std::exp(-std::fabs(z));
  *p = z >= 0.0f ? 1.0f / (1.0f + e) : e / (1.0f + e);
  return std::fmax(z, 0.0f) - z * y + std::log1p(e);
}

}  // namespace

absl::Status SigmoidCrossEntropy(absl::Span<const float> logits,
                                 absl::Span<const float> labels,
                                 absl::Span<float> probs,
                                 absl::Span<float> dlogits, double* loss_sum) {
  const size_t n = logits.size();
  PETREL_RETURN_IF_ERROR(CheckSize("labels", labels.size(), n));
  if (!probs.empty()) {
    PETREL_RETURN_IF_ERROR(CheckSize("probs", probs.size(), n));
  }
  if (!dlogits.empty()) {
    PETREL_RETURN_IF_ERROR(CheckSize("dlogits", dlogits.size(), n));
  }
  double loss = 0.0;
  for (size_t i = 0; i < n; ++i) {
    float p = 0.0f;
    loss += static_cast<double>(StableLoss(logits[i], labels[i], &p));
    if (!probs.empty()) probs[i] = p;
    if (!dlogits.empty()) dlogits[i] = p - labels[i];
  }
  if (loss_sum != nullptr) *loss_sum = loss;
  return absl::OkStatus();
}

namespace internal {

void SigmoidCrossEntropyCpu(absl::Span<const float> logits,
                            absl::Span<const float> labels,
                            absl::Span<float> probs, absl::Span<float> dlogits,
                            absl::Span<float> losses) {
  for (size_t i = 0; i < logits.size(); ++i) {
    float p = 0.0f;
    const float loss = StableLoss(logits[i], labels[i], &p);
    if (!probs.empty()) probs[i] = p;
    if (!dlogits.empty()) dlogits[i] = p - labels[i];
    if (!losses.empty()) losses[i] = loss;
  }
}

}  // namespace internal
}  // namespace petrel
