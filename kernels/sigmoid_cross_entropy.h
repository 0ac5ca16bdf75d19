// Sigmoid cross-entropy: the loss of a binary classifier from its logits,
// and its gradient with respect to the logits. With z a logit and y its
// label in [0, 1] (the readers map -1/+1 labels to 0/1):
//
//   p       = 1 / (1 + exp(-z))
//   loss    = -y log p - (1 - y) log (1 - p)
//           = max(z, 0) - z y + log1p(exp(-|z|))   (the stable form used)
//   dloss/dz = p - y
//
// The stable form never overflows: a logit of +-1000 gives a finite loss and
// a probability of exactly 1 or 0.
//
// Thread safety: a pure function; concurrent calls with distinct outputs are
// safe. A device version implements the same signature over device spans.
#ifndef PETREL_KERNELS_SIGMOID_CROSS_ENTROPY_H_
#define PETREL_KERNELS_SIGMOID_CROSS_ENTROPY_H_

#include "absl/status/status.h"
#include "absl/types/span.h"

#include "kernels/device.h"

namespace petrel {

// For every example i of logits/labels (same size n), writes probs[i] = p,
// dlogits[i] = p - y, and sets *loss_sum to the sum of the n losses
// (accumulated in double). probs and dlogits may each be empty, in which case
// it is not written (evaluation needs only probs and the loss); loss_sum may
// be null.
// Returns InvalidArgument when labels.size() != logits.size() or a non-empty
// probs/dlogits does not have n entries.
absl::Status SigmoidCrossEntropy(absl::Span<const float> logits,
                                 absl::Span<const float> labels,
                                 absl::Span<float> probs,
                                 absl::Span<float> dlogits, double* loss_sum);

// The device-neutral form: per example i writes probs[i], dlogits[i] and
// losses[i] (each output may be empty and is then not written; non-empty
// ones need n entries). Asynchronous on CUDA; sum `losses` on the host.
// Returns InvalidArgument for wrong sizes.
absl::Status SigmoidCrossEntropy(const Device& device,
                                 absl::Span<const float> logits,
                                 absl::Span<const float> labels,
                                 absl::Span<float> probs,
                                 absl::Span<float> dlogits,
                                 absl::Span<float> losses);

}  // namespace petrel

#endif  // PETREL_KERNELS_SIGMOID_CROSS_ENTROPY_H_
