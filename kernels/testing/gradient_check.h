// Float64 references shared by the kernel tests' gradient checks (part of
// the test-only library petrel_kernels_testing): central differences of a
// loss, the cross-entropy of one logit, and a sum with its error scale.
//
// Thread safety: pure functions (CentralDifference calls `loss` twice on
// the calling thread).
#ifndef PETREL_KERNELS_TESTING_GRADIENT_CHECK_H_
#define PETREL_KERNELS_TESTING_GRADIENT_CHECK_H_

#include <cstddef>
#include <functional>
#include <vector>

#include "absl/types/span.h"

namespace petrel {
namespace testing {

using LossFn = std::function<double(const std::vector<double>&)>;

// (loss(params + h e_q) - loss(params - h e_q)) / 2h with h = 1e-6: the
// derivative of `loss` in parameter q.
double CentralDifference(const LossFn& loss, const std::vector<double>& params,
                         size_t q);

// max(z, 0) - z y + log1p(exp(-|z|)): the sigmoid cross-entropy of logit z
// and label y, computed without overflow.
double CrossEntropyOfLogit(double z, double y);

// sum = the float64 sum of x; scale = the sum of |x|, which bounds a
// float32 sum's error (kernels/testing/random_batch.h, Gamma).
struct SumWithScale {
  double sum = 0.0;
  double scale = 0.0;
};
SumWithScale SumOf(absl::Span<const float> x);

}  // namespace testing
}  // namespace petrel

#endif  // PETREL_KERNELS_TESTING_GRADIENT_CHECK_H_
