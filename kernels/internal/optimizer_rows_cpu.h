// The CPU halves of kernels/optimizer_rows.h, called by its dispatchers
// after they have checked the sizes.
#ifndef PETREL_KERNELS_INTERNAL_OPTIMIZER_ROWS_CPU_H_
#define PETREL_KERNELS_INTERNAL_OPTIMIZER_ROWS_CPU_H_

#include <cstddef>

#include "absl/types/span.h"

#include "kernels/optimizer_rows.h"

namespace petrel {
namespace internal {

void AdagradRowUpdateCpu(const AdagradRowParams& params, absl::Span<float> w,
                         absl::Span<float> acc, absl::Span<const float> g);
void AdamRowUpdateCpu(const AdamRowParams& params, size_t dim,
                      absl::Span<float> w, absl::Span<float> m,
                      absl::Span<float> v, absl::Span<float> steps,
                      absl::Span<const float> g);
void FtrlRowUpdateCpu(const FtrlRowParams& params, absl::Span<float> w,
                      absl::Span<float> z, absl::Span<float> n,
                      absl::Span<const float> g);

}  // namespace internal
}  // namespace petrel

#endif  // PETREL_KERNELS_INTERNAL_OPTIMIZER_ROWS_CPU_H_
