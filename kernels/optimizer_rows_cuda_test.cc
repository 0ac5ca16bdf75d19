// Optimizer row updates on CUDA against the CPU path on the same fresh
// random weights, state and gradients, over several steps
// (kernels/optimizer_rows.h).
//
// Tolerance: each update is a handful of float32 operations (sqrt is
// correctly rounded on both sides; powf within 2 ulp on the GPU), and three
// steps compound them: 1e-5 relative to the value plus 1e-6 absolute, which
// also covers FTRL's clamp to 0 near |z| = l1 (w is continuous there).
// Adam's step counts must match exactly. Adam's bias correction 1 - beta2^t
// cancels (0.001 at t = 1): the CPU's float32 pow loses up to ~1000 ulps
// there (the GPU uses double), so Adam's weights get an extra 1e-3 * lr per
// step (a wrong formula is off by about lr).
#include <cmath>
#include <random>
#include <vector>

#include "gtest/gtest.h"

#include "kernels/cuda_test_util.h"
#include "kernels/optimizer_rows.h"
#include "kernels/testing/random_batch.h"

namespace petrel {
namespace {

using testing::RandomNonZero;

void ExpectClose(const std::vector<float>& got, const std::vector<float>& want,
                 const char* what, double extra = 0) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const double bound = 1e-5 * std::fabs(want[i]) + 1e-6 + extra;
    ASSERT_LE(std::fabs(double{got[i]} - want[i]), bound)
        << what << " " << i << ": cuda " << got[i] << " cpu " << want[i];
  }
}

std::vector<float> Positive(size_t n, std::mt19937_64* rng) {
  std::vector<float> v = RandomNonZero(n, 0.01f, 1, rng);
  for (float& x : v) x = std::fabs(x);
  return v;
}

class OptimizerRowsCudaTest : public testing::CudaTest {
 protected:
  void SetUp() override {
    CudaTest::SetUp();
    seed_ = testing::FreshSeed();
    rng_.seed(seed_);
  }
  static constexpr size_t kRows = 1001;
  static constexpr size_t kDim = 17;
  static constexpr size_t kN = kRows * kDim;
  static constexpr int kSteps = 3;
  uint64_t seed_ = 0;
  std::mt19937_64 rng_;
};

TEST_F(OptimizerRowsCudaTest, AdagradMatchesCpu) {
  SCOPED_TRACE(seed_);
  std::vector<float> w = RandomNonZero(kN, 0.01f, 1, &rng_);
  std::vector<float> acc = Positive(kN, &rng_);
  DeviceArray<float> d_w = Upload(w), d_acc = Upload(acc);
  AdagradRowParams p;
  for (int step = 0; step < kSteps; ++step) {
    const std::vector<float> g = RandomNonZero(kN, 0.01f, 3, &rng_);
    DeviceArray<float> d_g = Upload(g);
    ASSERT_TRUE(
        AdagradRowUpdate(cpu_, p, absl::MakeSpan(w), absl::MakeSpan(acc), g)
            .ok());
    ASSERT_TRUE(
        AdagradRowUpdate(gpu_, p, d_w.span(), d_acc.span(), d_g.span()).ok());
  }
  ExpectClose(Download(d_w), w, "w");
  ExpectClose(Download(d_acc), acc, "acc");
}

TEST_F(OptimizerRowsCudaTest, AdamMatchesCpuAndCountsSteps) {
  SCOPED_TRACE(seed_);
  std::vector<float> w = RandomNonZero(kN, 0.01f, 1, &rng_);
  std::vector<float> m = RandomNonZero(kN, 0.001f, 0.1f, &rng_);
  std::vector<float> v = Positive(kN, &rng_);
  std::vector<float> steps(kRows);
  for (size_t r = 0; r < kRows; ++r) steps[r] = static_cast<float>(r % 7);
  DeviceArray<float> d_w = Upload(w), d_m = Upload(m), d_v = Upload(v),
                     d_steps = Upload(steps);
  AdamRowParams p;
  p.learning_rate = 0.01f;
  for (int step = 0; step < kSteps; ++step) {
    const std::vector<float> g = RandomNonZero(kN, 0.01f, 3, &rng_);
    DeviceArray<float> d_g = Upload(g);
    ASSERT_TRUE(AdamRowUpdate(cpu_, p, kDim, absl::MakeSpan(w),
                              absl::MakeSpan(m), absl::MakeSpan(v),
                              absl::MakeSpan(steps), g)
                    .ok());
    ASSERT_TRUE(AdamRowUpdate(gpu_, p, kDim, d_w.span(), d_m.span(), d_v.span(),
                              d_steps.span(), d_g.span())
                    .ok());
  }
  EXPECT_EQ(Download(d_steps), steps);
  ExpectClose(Download(d_w), w, "w", 1e-3 * p.learning_rate * kSteps);
  ExpectClose(Download(d_m), m, "m");
  ExpectClose(Download(d_v), v, "v");
}

TEST_F(OptimizerRowsCudaTest, FtrlMatchesCpu) {
  SCOPED_TRACE(seed_);
  std::vector<float> w = RandomNonZero(kN, 0.01f, 1, &rng_);
  std::vector<float> z = RandomNonZero(kN, 0.01f, 3, &rng_);
  std::vector<float> n = Positive(kN, &rng_);
  DeviceArray<float> d_w = Upload(w), d_z = Upload(z), d_n = Upload(n);
  FtrlRowParams p;
  for (int step = 0; step < kSteps; ++step) {
    const std::vector<float> g = RandomNonZero(kN, 0.01f, 3, &rng_);
    DeviceArray<float> d_g = Upload(g);
    ASSERT_TRUE(FtrlRowUpdate(cpu_, p, absl::MakeSpan(w), absl::MakeSpan(z),
                              absl::MakeSpan(n), g)
                    .ok());
    ASSERT_TRUE(
        FtrlRowUpdate(gpu_, p, d_w.span(), d_z.span(), d_n.span(), d_g.span())
            .ok());
  }
  ExpectClose(Download(d_w), w, "w");
  ExpectClose(Download(d_z), z, "z");
  ExpectClose(Download(d_n), n, "n");
}

}  // namespace
}  // namespace petrel
