// Logistic regression kernels over a deduplicated sparse batch
// (kernels/sparse_batch.h). The model is one weight per unique key plus a
// bias:
//
//   logit[i] = bias + sum_{j in example i} weights[inverse[j]] * values[j]
//
// The backward pass turns dlogits (dL/dlogit per example, e.g. p - y from
// kernels/sigmoid_cross_entropy.h) into gradients per unique key. Gradients
// are SUMS over the batch's examples, not means: FTRL and Adagrad on the
// server expect per-example gradient sums, and the server's learning rate
// absorbs the batch size for SGD.
//
// CPU only: the spans live in host memory, and a CUDA `device` gets
// FailedPrecondition (a device version would take the same signatures over
// device spans).
//
// Thread safety: pure functions; concurrent calls with distinct outputs are
// safe.
#ifndef PETREL_KERNELS_LR_H_
#define PETREL_KERNELS_LR_H_

#include "absl/status/status.h"
#include "absl/types/span.h"

#include "kernels/device.h"
#include "kernels/sparse_batch.h"

namespace petrel {

// Writes logits[i] for every example of `batch`.
// Returns InvalidArgument when `batch` is invalid for weights.size() rows
// (ValidateSparseBatch) or logits.size() != batch.num_examples().
absl::Status LrForward(const Device& device, const SparseBatchView& batch,
                       absl::Span<const float> weights, float bias,
                       absl::Span<float> logits);

// Overwrites grad_weights[u] = sum over positions j with inverse[j] == u of
// dlogits[i(j)] * values[j] (0 for a row no position names), and
// *grad_bias = sum_i dlogits[i]. The scatter-add runs in position order, so
// the result is deterministic.
// Returns InvalidArgument when `batch` is invalid for grad_weights.size()
// rows or dlogits.size() != batch.num_examples().
// REQUIRES: grad_bias is non-null.
absl::Status LrBackward(const Device& device, const SparseBatchView& batch,
                        absl::Span<const float> dlogits,
                        absl::Span<float> grad_weights, float* grad_bias);

}  // namespace petrel

#endif  // PETREL_KERNELS_LR_H_
