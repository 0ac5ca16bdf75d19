// The CPU halves of kernels/fm.h, called by its dispatchers after they have
// checked the batch and the sizes.
#ifndef PETREL_KERNELS_INTERNAL_FM_CPU_H_
#define PETREL_KERNELS_INTERNAL_FM_CPU_H_

#include "absl/types/span.h"

#include "kernels/fm.h"
#include "kernels/sparse_batch.h"

namespace petrel {
namespace internal {

void FmForwardCpu(const SparseBatchView& batch, const FmParams& params,
                  absl::Span<float> logits, absl::Span<float> sum_vx);
// Overwrites grad_w and grad_v; returns the bias gradient.
float FmBackwardCpu(const SparseBatchView& batch, const FmParams& params,
                    absl::Span<const float> sum_vx,
                    absl::Span<const float> dlogits, absl::Span<float> grad_w,
                    absl::Span<float> grad_v);

}  // namespace internal
}  // namespace petrel

#endif  // PETREL_KERNELS_INTERNAL_FM_CPU_H_
