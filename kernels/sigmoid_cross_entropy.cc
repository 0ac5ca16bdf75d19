// Dispatcher of the device-neutral SigmoidCrossEntropy: sizes are checked
// here, so the CUDA entry point (kernels/internal/cuda_ops.h) can assume
// them.
#include "kernels/sigmoid_cross_entropy.h"

#include "base/status_macros.h"
#include "kernels/internal/cuda_ops.h"
#include "kernels/internal/sigmoid_cross_entropy_cpu.h"
#include "kernels/sparse_batch.h"

namespace petrel {

absl::Status SigmoidCrossEntropy(const Device& device,
                                 absl::Span<const float> logits,
                                 absl::Span<const float> labels,
                                 absl::Span<float> probs,
                                 absl::Span<float> dlogits,
                                 absl::Span<float> losses) {
  const size_t n = logits.size();
  PETREL_RETURN_IF_ERROR(CheckSize("labels", labels.size(), n));
  const char* names[] = {"probs", "dlogits", "losses"};
  const size_t sizes[] = {probs.size(), dlogits.size(), losses.size()};
  for (int o = 0; o < 3; ++o) {
    if (sizes[o] == 0) continue;  // not written
    PETREL_RETURN_IF_ERROR(CheckSize(names[o], sizes[o], n));
  }
  if (device.is_cuda()) {
#ifdef PETREL_HAVE_CUDA
    return internal::SigmoidCrossEntropyCuda(device, logits, labels, probs,
                                             dlogits, losses);
#else
    return absl::FailedPreconditionError("no CUDA in this build");
#endif
  }
  internal::SigmoidCrossEntropyCpu(logits, labels, probs, dlogits, losses);
  return absl::OkStatus();
}

}  // namespace petrel
