// Dense layers: GEMM (cuBLAS on CUDA, a cache-blocked loop on the CPU),
// bias, ReLU, and a fully connected layer forward and backward built from
// them. Matrices are row-major float32.
//
// A layer maps x [batch x in] to y = act(x W + b) with W [in x out] and
// b [out]; act is ReLU or the identity. Its backward takes dL/dy and
// produces dL/dW, dL/db (overwritten, SUMS over the batch like every
// gradient in kernels/) and optionally dL/dx.
//
// Errors: InvalidArgument when a span's size does not match the shape.
// On CUDA every kernel is asynchronous on the context's stream.
#ifndef PETREL_KERNELS_DENSE_H_
#define PETREL_KERNELS_DENSE_H_

#include <cstddef>

#include "absl/status/status.h"
#include "absl/types/span.h"

#include "kernels/device.h"

namespace petrel {

// c = alpha * op(a) * op(b) + beta * c, with op(a) [m x k], op(b) [k x n]
// and c [m x n]. a is stored [m x k] (or [k x m] when trans_a), b [k x n]
// (or [n x k] when trans_b). beta == 0 ignores c's old contents (NaN too).
absl::Status Gemm(const Device& device, bool trans_a, bool trans_b, size_t m,
                  size_t n, size_t k, float alpha, absl::Span<const float> a,
                  absl::Span<const float> b, float beta, absl::Span<float> c);

// y[r,c] += bias[c] for y [rows x cols].
absl::Status AddBias(const Device& device, size_t rows, size_t cols,
                     absl::Span<const float> bias, absl::Span<float> y);
// dbias[c] = sum_r dy[r,c] (overwritten).
absl::Status BiasGrad(const Device& device, size_t rows, size_t cols,
                      absl::Span<const float> dy, absl::Span<float> dbias);
// y = max(y, 0) in place.
absl::Status Relu(const Device& device, absl::Span<float> y);
// dy[i] = 0 where y[i] <= 0 (y is ReLU's output), in place.
absl::Status ReluBackward(const Device& device, absl::Span<const float> y,
                          absl::Span<float> dy);

struct DenseShape {
  size_t batch = 0;
  size_t in = 0;
  size_t out = 0;
  bool relu = false;
};

// y = act(x W + b).
absl::Status DenseForward(const Device& device, const DenseShape& shape,
                          absl::Span<const float> x, absl::Span<const float> w,
                          absl::Span<const float> b, absl::Span<float> y);

// `y` is DenseForward's output; `dy` holds dL/dy on entry and is
// overwritten with dL/d(x W + b). Writes dw [in x out], db [out] and, when
// dx is not empty, dx [batch x in].
absl::Status DenseBackward(const Device& device, const DenseShape& shape,
                           absl::Span<const float> x, absl::Span<const float> w,
                           absl::Span<const float> y, absl::Span<float> dy,
                           absl::Span<float> dx, absl::Span<float> dw,
                           absl::Span<float> db);

}  // namespace petrel

#endif  // PETREL_KERNELS_DENSE_H_
