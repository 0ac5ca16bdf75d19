// Dispatchers of kernels/fm.h: the op is CPU-only, so a CUDA device is
// refused before any span is read; every size check happens here.
#include "kernels/fm.h"

#include "glog/logging.h"

#include "base/status_macros.h"
#include "kernels/internal/fm_cpu.h"

namespace petrel {
namespace {

absl::Status CheckParams(const SparseBatchView& batch, const FmParams& params,
                         absl::Span<const float> sum_vx) {
  const size_t unique = params.w.size();
  PETREL_RETURN_IF_ERROR(ValidateSparseBatch(batch, unique));
  PETREL_RETURN_IF_ERROR(CheckSize("v", params.v.size(), unique * params.k));
  return CheckSize("sum_vx", sum_vx.size(), batch.num_examples() * params.k);
}

}  // namespace

absl::Status FmForward(const Device& device, const SparseBatchView& batch,
                       const FmParams& params, absl::Span<float> logits,
                       absl::Span<float> sum_vx) {
  PETREL_RETURN_IF_ERROR(RequireCpu(device, "FmForward"));
  PETREL_RETURN_IF_ERROR(CheckParams(batch, params, sum_vx));
  PETREL_RETURN_IF_ERROR(
      CheckSize("logits", logits.size(), batch.num_examples()));
  internal::FmForwardCpu(batch, params, logits, sum_vx);
  return absl::OkStatus();
}

absl::Status FmBackward(const Device& device, const SparseBatchView& batch,
                        const FmParams& params, absl::Span<const float> sum_vx,
                        absl::Span<const float> dlogits,
                        absl::Span<float> grad_w, absl::Span<float> grad_v,
                        float* grad_bias) {
  CHECK(grad_bias != nullptr);
  PETREL_RETURN_IF_ERROR(RequireCpu(device, "FmBackward"));
  PETREL_RETURN_IF_ERROR(CheckParams(batch, params, sum_vx));
  PETREL_RETURN_IF_ERROR(
      CheckSize("dlogits", dlogits.size(), batch.num_examples()));
  PETREL_RETURN_IF_ERROR(CheckSize("grad_w", grad_w.size(), params.w.size()));
  PETREL_RETURN_IF_ERROR(CheckSize("grad_v", grad_v.size(), params.v.size()));
  *grad_bias =
      internal::FmBackwardCpu(batch, params, sum_vx, dlogits, grad_w, grad_v);
  return absl::OkStatus();
}

}  // namespace petrel
