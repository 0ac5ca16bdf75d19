// Optimizer row updates against a float64 evaluation of the header's
// formulas on fresh random state (never zeros). Bounds, with u = 2^-24:
// - Adagrad: acc within 2u acc'; w within 2u |w'| + 8u |lr g / (sqrt+eps)|.
// - Adam: m, v within 4u of their magnitudes; the bias correction 1 - b^t
//   cancels (b2 = 0.999 amplifies pow's rounding by up to 1/(1-b2^t) =
//   1000), so the step is within 4000u of its size; w within 2u |w'| plus
//   that.
// - FTRL: sigma = (sqrt(n') - sqrt(n)) / alpha cancels, so z's error is
//   bounded by 16u (|z| + |g| + (sqrt(n') + sqrt(n)) |w| / alpha) and w's
//   by that over the denominator plus 16u |w'|; n within 2u n'.
#include "kernels/optimizer_rows.h"

#include <cmath>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

#include "kernels/testing/random_batch.h"
#include "kernels/testing/traced_rng.h"

namespace petrel {
namespace {

using testing::RandomNonZero;

const Device kCpu = Device::Cpu();
const double kU = std::ldexp(1.0, -24);

std::vector<float> Positive(size_t n, float lo, float hi,
                            std::mt19937_64* rng) {
  std::vector<float> out = RandomNonZero(n, lo, hi, rng);
  for (float& x : out) x = std::fabs(x);
  return out;
}

TEST(OptimizerRowsTest, AdagradMatchesFloat64Reference) {
  testing::TracedRng rng;
  for (int trial = 0; trial < 10; ++trial) {
    const size_t n = std::uniform_int_distribution<size_t>(1, 500)(rng);
    AdagradRowParams params;
    params.learning_rate = Positive(1, 0.001f, 0.5f, &rng)[0];
    params.epsilon = Positive(1, 1e-8f, 1e-3f, &rng)[0];
    auto w = RandomNonZero(n, 0.01f, 1.0f, &rng);
    auto acc = Positive(n, 0.01f, 2.0f, &rng);
    const auto g = RandomNonZero(n, 0.01f, 1.0f, &rng);
    const std::vector<float> w0 = w, acc0 = acc;
    ASSERT_TRUE(AdagradRowUpdate(kCpu, params, absl::MakeSpan(w),
                                 absl::MakeSpan(acc), g)
                    .ok());
    for (size_t i = 0; i < n; ++i) {
      const double a = double{acc0[i]} + double{g[i]} * g[i];
      const double step =
          double{params.learning_rate} * g[i] / (std::sqrt(a) + params.epsilon);
      const double want = w0[i] - step;
      ASSERT_LE(std::fabs(acc[i] - a), 2 * kU * a) << i;
      ASSERT_LE(std::fabs(w[i] - want),
                2 * kU * std::fabs(want) + 8 * kU * std::fabs(step))
          << i;
    }
  }
}

TEST(OptimizerRowsTest, AdamMatchesFloat64ReferenceWithPerRowSteps) {
  testing::TracedRng rng;
  for (int trial = 0; trial < 10; ++trial) {
    const size_t rows = std::uniform_int_distribution<size_t>(1, 60)(rng);
    const size_t dim = std::uniform_int_distribution<size_t>(1, 17)(rng);
    const size_t n = rows * dim;
    AdamRowParams params;
    params.learning_rate = Positive(1, 0.001f, 0.1f, &rng)[0];
    params.beta1 = Positive(1, 0.5f, 0.95f, &rng)[0];
    params.beta2 = Positive(1, 0.9f, 0.999f, &rng)[0];
    params.epsilon = Positive(1, 1e-8f, 1e-3f, &rng)[0];
    auto w = RandomNonZero(n, 0.01f, 1.0f, &rng);
    auto m = RandomNonZero(n, 0.01f, 1.0f, &rng);
    auto v = Positive(n, 0.01f, 1.0f, &rng);
    const auto g = RandomNonZero(n, 0.01f, 1.0f, &rng);
    // Each row at its own step count, 0 (a fresh row) to 30.
    std::vector<float> steps(rows);
    std::uniform_int_distribution<int> step(0, 30);
    for (float& t : steps) t = static_cast<float>(step(rng));
    const std::vector<float> w0 = w, m0 = m, v0 = v, steps0 = steps;
    ASSERT_TRUE(AdamRowUpdate(kCpu, params, dim, absl::MakeSpan(w),
                              absl::MakeSpan(m), absl::MakeSpan(v),
                              absl::MakeSpan(steps), g)
                    .ok());
    const double b1 = params.beta1, b2 = params.beta2;
    for (size_t r = 0; r < rows; ++r) {
      const double t = steps0[r] + 1.0;
      ASSERT_EQ(steps[r], static_cast<float>(t));
      const double c1 = 1 - std::pow(b1, t), c2 = 1 - std::pow(b2, t);
      for (size_t i = r * dim; i < (r + 1) * dim; ++i) {
        const double mm = b1 * m0[i] + (1 - b1) * g[i];
        const double vv = b2 * v0[i] + (1 - b2) * double{g[i]} * g[i];
        const double step_size = params.learning_rate * (mm / c1) /
                                 (std::sqrt(vv / c2) + params.epsilon);
        const double want = w0[i] - step_size;
        ASSERT_LE(std::fabs(m[i] - mm),
                  4 * kU * (b1 * std::fabs(m0[i]) + std::fabs(g[i])))
            << i;
        ASSERT_LE(std::fabs(v[i] - vv), 4 * kU * (v0[i] + g[i] * g[i])) << i;
        ASSERT_LE(std::fabs(w[i] - want),
                  2 * kU * std::fabs(want) + 4000 * kU * std::fabs(step_size))
            << "row " << r << " t " << t << " entry " << i;
      }
    }
  }
}

TEST(OptimizerRowsTest, FtrlMatchesFloat64Reference) {
  testing::TracedRng rng;
  for (int trial = 0; trial < 10; ++trial) {
    const size_t n = std::uniform_int_distribution<size_t>(1, 500)(rng);
    FtrlRowParams params;
    params.alpha = Positive(1, 0.01f, 0.5f, &rng)[0];
    params.beta = Positive(1, 0.1f, 2.0f, &rng)[0];
    params.l1 = Positive(1, 0.01f, 1.0f, &rng)[0];
    params.l2 = Positive(1, 0.01f, 1.0f, &rng)[0];
    auto w = RandomNonZero(n, 0.01f, 1.0f, &rng);
    auto z = RandomNonZero(n, 0.01f, 3.0f, &rng);
    auto nn = Positive(n, 0.01f, 4.0f, &rng);
    const auto g = RandomNonZero(n, 0.01f, 1.0f, &rng);
    const std::vector<float> w0 = w, z0 = z, n0 = nn;
    ASSERT_TRUE(FtrlRowUpdate(kCpu, params, absl::MakeSpan(w),
                              absl::MakeSpan(z), absl::MakeSpan(nn), g)
                    .ok());
    const double alpha = params.alpha, beta = params.beta;
    const double l1 = params.l1, l2 = params.l2;
    for (size_t i = 0; i < n; ++i) {
      const double n_new = double{n0[i]} + double{g[i]} * g[i];
      const double sigma = (std::sqrt(n_new) - std::sqrt(n0[i])) / alpha;
      const double zz = z0[i] + g[i] - sigma * w0[i];
      const double denom = (beta + std::sqrt(n_new)) / alpha + l2;
      const double want =
          std::fabs(zz) <= l1 ? 0.0 : -(zz - std::copysign(l1, zz)) / denom;
      const double z_err =
          16 * kU *
          (std::fabs(z0[i]) + std::fabs(g[i]) +
           (std::sqrt(n_new) + std::sqrt(n0[i])) * std::fabs(w0[i]) / alpha);
      ASSERT_LE(std::fabs(nn[i] - n_new), 2 * kU * n_new) << i;
      ASSERT_LE(std::fabs(z[i] - zz), z_err) << i;
      ASSERT_LE(std::fabs(w[i] - want),
                z_err / denom + 16 * kU * std::fabs(want))
          << i;
    }
  }
}

TEST(OptimizerRowsTest, FtrlZeroesWeightsInsideL1) {
  FtrlRowParams params;  // l1 = 1
  std::vector<float> w = {0.5f, 0.5f}, z = {0.2f, -5.0f}, n = {1.0f, 1.0f};
  const std::vector<float> g = {0.1f, 0.1f};
  ASSERT_TRUE(FtrlRowUpdate(kCpu, params, absl::MakeSpan(w), absl::MakeSpan(z),
                            absl::MakeSpan(n), g)
                  .ok());
  EXPECT_EQ(w[0], 0.0f);
  EXPECT_GT(w[1], 0.0f);  // z < -l1 gives a positive weight
}

TEST(OptimizerRowsTest, RejectsShapeMismatches) {
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  std::vector<float> w(8, 0.5f), a(8, 0.5f), b(8, 0.5f), g(8, 0.5f),
      steps(2, 0.0f);
  auto s = [](std::vector<float>& x, size_t n) {
    return absl::MakeSpan(x).first(n);
  };
  EXPECT_EQ(AdagradRowUpdate(kCpu, {}, s(w, 8), s(a, 7), g).code(), kInvalid);
  EXPECT_EQ(AdagradRowUpdate(kCpu, {}, s(w, 8), s(a, 8), s(g, 7)).code(),
            kInvalid);
  EXPECT_EQ(
      AdamRowUpdate(kCpu, {}, 4, s(w, 8), s(a, 8), s(b, 8), s(steps, 1), g)
          .code(),
      kInvalid);  // 1 row x 4 != 8
  EXPECT_EQ(
      AdamRowUpdate(kCpu, {}, 4, s(w, 8), s(a, 7), s(b, 8), s(steps, 2), g)
          .code(),
      kInvalid);
  EXPECT_EQ(
      AdamRowUpdate(kCpu, {}, 4, s(w, 8), s(a, 8), s(b, 7), s(steps, 2), g)
          .code(),
      kInvalid);
  EXPECT_EQ(AdamRowUpdate(kCpu, {}, 4, s(w, 8), s(a, 8), s(b, 8), s(steps, 2),
                          s(g, 7))
                .code(),
            kInvalid);
  EXPECT_EQ(steps, std::vector<float>(2, 0.0f));  // nothing ran
  EXPECT_EQ(FtrlRowUpdate(kCpu, {}, s(w, 8), s(a, 8), s(b, 7), g).code(),
            kInvalid);
  EXPECT_EQ(FtrlRowUpdate(kCpu, {}, s(w, 8), s(a, 7), s(b, 8), g).code(),
            kInvalid);
  EXPECT_EQ(FtrlRowUpdate(kCpu, {}, s(w, 8), s(a, 8), s(b, 8), s(g, 1)).code(),
            kInvalid);
}

}  // namespace
}  // namespace petrel
