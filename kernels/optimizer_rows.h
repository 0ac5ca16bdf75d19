// Optimizer updates of parameter rows on a device, for GPU-side optimizers
// (today the servers apply updates with server/optimizer.h). Both call the
// per-value formulas of kernels/optimizer_formulas.h, which also defines the
// parameter structs, so either side gives the same numbers (bit for bit on
// the CPU). Weights, state and gradients are flat arrays of the same length
// n (rows x dim); g is a gradient SUM as the trainers push it. Adam keeps
// one step count per row of `dim` values, incremented before the row's step.
//
// Errors: InvalidArgument when sizes differ (Adam: steps.size() * dim !=
// w.size()). Asynchronous on CUDA.
#ifndef PETREL_KERNELS_OPTIMIZER_ROWS_H_
#define PETREL_KERNELS_OPTIMIZER_ROWS_H_

#include <cstddef>

#include "absl/status/status.h"
#include "absl/types/span.h"

#include "kernels/device.h"
#include "kernels/optimizer_formulas.h"

namespace petrel {

absl::Status AdagradRowUpdate(const Device& device,
                              const AdagradRowParams& params,
                              absl::Span<float> w, absl::Span<float> acc,
                              absl::Span<const float> g);

// steps: one step count per row (float, as the server stores it).
absl::Status AdamRowUpdate(const Device& device, const AdamRowParams& params,
                           size_t dim, absl::Span<float> w, absl::Span<float> m,
                           absl::Span<float> v, absl::Span<float> steps,
                           absl::Span<const float> g);

absl::Status FtrlRowUpdate(const Device& device, const FtrlRowParams& params,
                           absl::Span<float> w, absl::Span<float> z,
                           absl::Span<float> n, absl::Span<const float> g);

}  // namespace petrel

#endif  // PETREL_KERNELS_OPTIMIZER_ROWS_H_
