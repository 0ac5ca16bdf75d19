// Optimizer updates of parameter rows on a device, for GPU-side optimizers
// (today the servers apply updates with server/optimizer.h; these kernels
// follow the same formulas so that either side gives the same numbers).
// Weights, state and gradients are flat arrays of the same length n
// (rows x dim); g is a gradient SUM as the trainers push it.
//
//   Adagrad  acc += g^2; w -= lr * g / (sqrt(acc) + eps)
//   Adam     per row r with `dim` values: t[r] += 1;
//            m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
//            w -= lr * (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps)
//   FTRL     sigma = (sqrt(n + g^2) - sqrt(n)) / alpha; z += g - sigma w;
//            n += g^2; w = |z| <= l1 ? 0
//                : -(z - sign(z) l1) / ((beta + sqrt(n)) / alpha + l2)
//
// Errors: InvalidArgument when sizes differ (Adam: steps.size() * dim !=
// w.size()). Asynchronous on CUDA.
#ifndef PETREL_KERNELS_OPTIMIZER_ROWS_H_
#define PETREL_KERNELS_OPTIMIZER_ROWS_H_

#include <cstddef>

#include "absl/status/status.h"
#include "absl/types/span.h"

#include "kernels/device.h"

namespace petrel {

struct AdagradRowParams {
  float learning_rate = 0.05f;
  float epsilon = 1e-8f;
};
absl::Status AdagradRowUpdate(const Device& device,
                              const AdagradRowParams& params,
                              absl::Span<float> w, absl::Span<float> acc,
                              absl::Span<const float> g);

struct AdamRowParams {
  float learning_rate = 0.001f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float epsilon = 1e-8f;
};
// steps: one step count per row (float, as the server stores it).
absl::Status AdamRowUpdate(const Device& device, const AdamRowParams& params,
                           size_t dim, absl::Span<float> w, absl::Span<float> m,
                           absl::Span<float> v, absl::Span<float> steps,
                           absl::Span<const float> g);

struct FtrlRowParams {
  float alpha = 0.05f;
  float beta = 1.0f;
  float l1 = 1.0f;
  float l2 = 1.0f;
};
absl::Status FtrlRowUpdate(const Device& device, const FtrlRowParams& params,
                           absl::Span<float> w, absl::Span<float> z,
                           absl::Span<float> n, absl::Span<const float> g);

}  // namespace petrel

#endif  // PETREL_KERNELS_OPTIMIZER_ROWS_H_
