// The CPU half of the device-neutral SigmoidCrossEntropy
// (kernels/sigmoid_cross_entropy.h), called after its sizes are checked.
#ifndef PETREL_KERNELS_INTERNAL_SIGMOID_CROSS_ENTROPY_CPU_H_
#define PETREL_KERNELS_INTERNAL_SIGMOID_CROSS_ENTROPY_CPU_H_

#include "absl/types/span.h"

namespace petrel {
namespace internal {

// Empty outputs are not written; non-empty ones have logits.size() entries.
void SigmoidCrossEntropyCpu(absl::Span<const float> logits,
                            absl::Span<const float> labels,
                            absl::Span<float> probs, absl::Span<float> dlogits,
                            absl::Span<float> losses);

}  // namespace internal
}  // namespace petrel

#endif  // PETREL_KERNELS_INTERNAL_SIGMOID_CROSS_ENTROPY_CPU_H_
