// The CPU halves of kernels/lr.h, called by its dispatchers after they have
// checked the batch and the sizes.
#ifndef PETREL_KERNELS_INTERNAL_LR_CPU_H_
#define PETREL_KERNELS_INTERNAL_LR_CPU_H_

#include "absl/types/span.h"

#include "kernels/sparse_batch.h"

namespace petrel {
namespace internal {

void LrForwardCpu(const SparseBatchView& batch, absl::Span<const float> weights,
                  float bias, absl::Span<float> logits);
// Overwrites grad_weights; returns the bias gradient.
float LrBackwardCpu(const SparseBatchView& batch,
                    absl::Span<const float> dlogits,
                    absl::Span<float> grad_weights);

}  // namespace internal
}  // namespace petrel

#endif  // PETREL_KERNELS_INTERNAL_LR_CPU_H_
