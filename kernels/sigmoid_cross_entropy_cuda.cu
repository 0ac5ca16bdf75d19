// Sigmoid cross-entropy on CUDA (kernels/sigmoid_cross_entropy.h): the
// CPU's stable formulas, one thread per example.
#include <cstddef>

#include "kernels/cuda_status.h"
#include "kernels/internal/cuda_ops.h"

namespace petrel {
namespace internal {
namespace {

constexpr unsigned kBlock = 256;

// Null outputs are not written.
__global__ void SigmoidCrossEntropyKernel(size_t n, const float* logits,
                                          const float* labels, float* probs,
                                          float* dlogits, float* losses) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x) {
    const float z = logits[i];
    const float y = labels[i];
    // e = exp(-|z|) is in (0, 1]: nothing overflows.
    const float e = expf(-fabsf(z));
    const float p = z >= 0.0f ? 1.0f / (1.0f + e) : e / (1.0f + e);
    if (probs != nullptr) probs[i] = p;
    if (dlogits != nullptr) dlogits[i] = p - y;
    if (losses != nullptr) losses[i] = fmaxf(z, 0.0f) - z * y + log1pf(e);
  }
}

}  // namespace

absl::Status SigmoidCrossEntropyCuda(const Device& device,
                                     absl::Span<const float> logits,
                                     absl::Span<const float> labels,
                                     absl::Span<float> probs,
                                     absl::Span<float> dlogits,
                                     absl::Span<float> losses) {
  const size_t n = logits.size();
  if (n == 0) return absl::OkStatus();
  SigmoidCrossEntropyKernel<<<GridFor(n, kBlock), kBlock, 0,
                              StreamOf(device)>>>(
      n, logits.data(), labels.data(), probs.empty() ? nullptr : probs.data(),
      dlogits.empty() ? nullptr : dlogits.data(),
      losses.empty() ? nullptr : losses.data());
  PETREL_CUDA_RETURN_IF_LAUNCH_ERROR("SigmoidCrossEntropyKernel");
  return absl::OkStatus();
}

}  // namespace internal
}  // namespace petrel
