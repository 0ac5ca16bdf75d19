// CPU row updates. Each loop body is the one of server/optimizer.cc (same
// float operations in the same order, without the server's weight
// clipping), so both sides give the same bits.
#include "kernels/internal/optimizer_rows_cpu.h"

#include <cmath>

namespace petrel {
namespace internal {

void AdagradRowUpdateCpu(const AdagradRowParams& params, absl::Span<float> w,
                         absl::Span<float> acc, absl::Span<const float> g) {
  const float lr = params.learning_rate;
  for (size_t i = 0; i < w.size(); ++i) {
    acc[i] += g[i] * g[i];
    w[i] = w[i] - lr * g[i] / (std::sqrt(acc[i]) + params.epsilon);
  }
}

void AdamRowUpdateCpu(const AdamRowParams& params, size_t dim,
                      absl::Span<float> w, absl::Span<float> m,
                      absl::Span<float> v, absl::Span<float> steps,
                      absl::Span<const float> g) {
  const float b1 = params.beta1, b2 = params.beta2;
  for (size_t row = 0; row < steps.size(); ++row) {
    float& t = steps[row];
    t += 1.0f;
    const float c1 = 1.0f - std::pow(b1, t), c2 = 1.0f - std::pow(b2, t);
    for (size_t i = row * dim; i < (row + 1) * dim; ++i) {
      m[i] = b1 * m[i] + (1.0f - b1) * g[i];
      v[i] = b2 * v[i] + (1.0f - b2) * g[i] * g[i];
      float step = (m[i] / c1) / (std::sqrt(v[i] / c2) + params.epsilon);
      w[i] = w[i] - params.learning_rate * step;
    }
  }
}

void FtrlRowUpdateCpu(const FtrlRowParams& params, absl::Span<float> w,
                      absl::Span<float> z, absl::Span<float> n,
                      absl::Span<const float> g) {
  const float alpha = params.alpha, beta = params.beta;
  const float l1 = params.l1, l2 = params.l2;
  for (size_t i = 0; i < w.size(); ++i) {
    float n_new = n[i] + g[i] * g[i];
    float sigma = (std::sqrt(n_new) - std::sqrt(n[i])) / alpha;
    z[i] += g[i] - sigma * w[i];
    n[i] = n_new;
    float zi = z[i];
    w[i] = std::fabs(zi) <= l1 ? 0.0f
                               : -(zi - std::copysign(l1, zi)) /
                                     ((beta + std::sqrt(n_new)) / alpha + l2);
  }
}

}  // namespace internal
}  // namespace petrel
