// Dispatchers of kernels/lr.h: the op is CPU-only, so a CUDA device is
// refused before any span is read; every size check happens here.
#include "kernels/lr.h"

#include "glog/logging.h"

#include "base/status_macros.h"
#include "kernels/internal/lr_cpu.h"

namespace petrel {

absl::Status LrForward(const Device& device, const SparseBatchView& batch,
                       absl::Span<const float> weights, float bias,
                       absl::Span<float> logits) {
  PETREL_RETURN_IF_ERROR(RequireCpu(device, "LrForward"));
  PETREL_RETURN_IF_ERROR(ValidateSparseBatch(batch, weights.size()));
  PETREL_RETURN_IF_ERROR(
      CheckSize("logits", logits.size(), batch.num_examples()));
  internal::LrForwardCpu(batch, weights, bias, logits);
  return absl::OkStatus();
}

absl::Status LrBackward(const Device& device, const SparseBatchView& batch,
                        absl::Span<const float> dlogits,
                        absl::Span<float> grad_weights, float* grad_bias) {
  CHECK(grad_bias != nullptr);
  PETREL_RETURN_IF_ERROR(RequireCpu(device, "LrBackward"));
  PETREL_RETURN_IF_ERROR(ValidateSparseBatch(batch, grad_weights.size()));
  PETREL_RETURN_IF_ERROR(
      CheckSize("dlogits", dlogits.size(), batch.num_examples()));
  *grad_bias = internal::LrBackwardCpu(batch, dlogits, grad_weights);
  return absl::OkStatus();
}

}  // namespace petrel
