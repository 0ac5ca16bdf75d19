#include "kernels/testing/gradient_check.h"

#include <cmath>

namespace petrel {
namespace testing {

double CentralDifference(const LossFn& loss, const std::vector<double>& params,
                         size_t q) {
  const double h = 1e-6;
  std::vector<double> plus = params, minus = params;
  plus[q] += h;
  minus[q] -= h;
  return (loss(plus) - loss(minus)) / (2 * h);
}

double CrossEntropyOfLogit(double z, double y) {
  return std::fmax(z, 0.0) - z * y + std::log1p(std::exp(-std::fabs(z)));
}

SumWithScale SumOf(absl::Span<const float> x) {
  SumWithScale s;
  for (float v : x) {
    s.sum += v;
    s.scale += std::fabs(v);
  }
  return s;
}

}  // namespace testing
}  // namespace petrel
