// CPU row updates: loops over the formulas of kernels/optimizer_formulas.h,
// which server/optimizer.cc calls too, so both sides give the same bits.
// The parameters are copied to locals so that they stay in registers.
#include "kernels/internal/optimizer_rows_cpu.h"

#include "kernels/optimizer_formulas.h"

namespace petrel {
namespace internal {

void AdagradRowUpdateCpu(const AdagradRowParams& params, absl::Span<float> w,
                         absl::Span<float> acc, absl::Span<const float> g) {
  const AdagradRowParams p = params;
  for (size_t i = 0; i < w.size(); ++i) {
    w[i] = AdagradStep(p, w[i], g[i], acc[i]);
  }
}

void AdamRowUpdateCpu(const AdamRowParams& params, size_t dim,
                      absl::Span<float> w, absl::Span<float> m,
                      absl::Span<float> v, absl::Span<float> steps,
                      absl::Span<const float> g) {
  const AdamRowParams p = params;
  for (size_t row = 0; row < steps.size(); ++row) {
    float& t = steps[row];
    t += 1.0f;
    const float c1 = AdamCorrection(p.beta1, t);
    const float c2 = AdamCorrection(p.beta2, t);
    for (size_t i = row * dim; i < (row + 1) * dim; ++i) {
      w[i] = AdamStep(p, c1, c2, w[i], g[i], m[i], v[i]);
    }
  }
}

void FtrlRowUpdateCpu(const FtrlRowParams& params, absl::Span<float> w,
                      absl::Span<float> z, absl::Span<float> n,
                      absl::Span<const float> g) {
  const FtrlRowParams p = params;
  for (size_t i = 0; i < w.size(); ++i) {
    w[i] = FtrlStep(p, w[i], g[i], z[i], n[i]);
  }
}

}  // namespace internal
}  // namespace petrel
