// Factorization machine kernels (order 2, factor dim k) over a deduplicated
// sparse batch (kernels/sparse_batch.h). Per unique key u the model has a
// linear weight w[u] and a factor row v[u*k .. u*k+k-1]; with x_j the
// feature values of example i:
//
//   s[i,f]   = sum_j v[j,f] x_j                      (kept for the backward)
//   logit[i] = bias + sum_j w[j] x_j
//              + 1/2 sum_f ( s[i,f]^2 - sum_j v[j,f]^2 x_j^2 )
//
// and, given dlogit[i] = dL/dlogit[i], the backward scatter-adds into unique
// rows
//
//   dw[u]   += dlogit[i] x_j
//   dv[u,f] += dlogit[i] x_j (s[i,f] - v[u,f] x_j)
//
// over every position j with inverse[j] == u. Like kernels/lr.h, gradients
// are SUMS over the batch (what FTRL and Adagrad on the server expect).
//
// CPU only: the spans live in host memory, and a CUDA `device` gets
// FailedPrecondition (a device version would take the same signatures over
// device spans).
//
// Thread safety: pure functions; concurrent calls with distinct outputs are
// safe.
#ifndef PETREL_KERNELS_FM_H_
#define PETREL_KERNELS_FM_H_

#include <cstddef>

#include "absl/status/status.h"
#include "absl/types/span.h"

#include "kernels/device.h"
#include "kernels/sparse_batch.h"

namespace petrel {

// The parameters of the rows a batch touches (borrowed spans).
struct FmParams {
  absl::Span<const float> w;  // [unique]
  absl::Span<const float> v;  // [unique * k], row-major
  size_t k = 0;               // factor dim; 0 degenerates to LR
  float bias = 0.0f;
};

// Writes logits[i] and sum_vx[i*k + f] = s[i,f] for every example of
// `batch`; pass sum_vx unchanged to FmBackward.
// Returns InvalidArgument when `batch` is invalid for params.w.size() rows,
// params.v.size() != w.size() * k, logits.size() != examples or
// sum_vx.size() != examples * k.
absl::Status FmForward(const Device& device, const SparseBatchView& batch,
                       const FmParams& params, absl::Span<float> logits,
                       absl::Span<float> sum_vx);

// Overwrites grad_w ([unique]) and grad_v ([unique * k]) with the sums above
// (0 for rows no position names) and *grad_bias with sum_i dlogits[i].
// `sum_vx` is FmForward's output for the same batch and params. The
// scatter-add runs in position order, so the result is deterministic.
// Returns InvalidArgument when `batch` is invalid for params.w.size() rows,
// or params.v, sum_vx, dlogits, grad_w or grad_v has the wrong size.
// REQUIRES: grad_bias is non-null.
absl::Status FmBackward(const Device& device, const SparseBatchView& batch,
                        const FmParams& params, absl::Span<const float> sum_vx,
                        absl::Span<const float> dlogits,
                        absl::Span<float> grad_w, absl::Span<float> grad_v,
                        float* grad_bias);

}  // namespace petrel

#endif  // PETREL_KERNELS_FM_H_
