// Dense kernels on CUDA (cuBLAS GEMM, bias, ReLU, whole layers) against the
// CPU path on the same fresh random inputs (kernels/dense.h).
//
// Tolerance: a float32 dot product of k terms, in any order and with or
// without fused multiply-adds, is within gamma_{k+2} * sum|terms| of the
// exact value (Higham 3.1, 4.2; +2 for alpha and beta), so the two paths
// differ by at most twice that. Element-wise kernels (bias, ReLU) do one
// rounding the same way on both sides and must agree exactly.
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"

#include "kernels/cuda_test_util.h"
#include "kernels/dense.h"
#include "kernels/testing/random_batch.h"

namespace petrel {
namespace {

using testing::Gamma;
using testing::RandomNonZero;

// sum_p |op(a)(i,p) * op(b)(p,j)|, row-major, in double.
std::vector<double> AbsProduct(bool ta, bool tb, size_t m, size_t n, size_t k,
                               const std::vector<float>& a,
                               const std::vector<float>& b) {
  std::vector<double> c(m * n, 0.0);
  for (size_t i = 0; i < m; ++i) {
    for (size_t p = 0; p < k; ++p) {
      const double x = std::fabs(ta ? a[p * m + i] : a[i * k + p]);
      for (size_t j = 0; j < n; ++j) {
        c[i * n + j] += x * std::fabs(tb ? b[j * k + p] : b[p * n + j]);
      }
    }
  }
  return c;
}

void ExpectWithin(const std::vector<float>& got, const std::vector<float>& want,
                  const std::vector<double>& abs_sum, size_t terms,
                  const char* what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k) {
    const double bound = 2 * Gamma(terms + 2) * abs_sum[k] + 1e-30;
    ASSERT_LE(std::fabs(double{got[k]} - want[k]), bound)
        << what << " entry " << k << ": cuda " << got[k] << " cpu " << want[k];
  }
}

class DenseCudaTest : public testing::CudaTest {
 protected:
  void SetUp() override {
    CudaTest::SetUp();
    seed_ = testing::FreshSeed();
    rng_.seed(seed_);
  }
  uint64_t seed_ = 0;
  std::mt19937_64 rng_;
};

TEST_F(DenseCudaTest, GemmMatchesCpuForEveryTransposeAndBeta) {
  SCOPED_TRACE(seed_);
  struct Shape {
    size_t m, n, k;
  };
  // The MLP's layer shapes (batch 64/1024 is m), odd sizes, k == 0.
  for (Shape s : {Shape{64, 256, 637}, Shape{1024, 1, 128}, Shape{37, 53, 71},
                  Shape{1, 1, 1}, Shape{5, 7, 0}}) {
    for (int t = 0; t < 4; ++t) {
      for (float beta : {0.0f, 0.75f}) {
        const bool ta = t & 1, tb = t & 2;
        SCOPED_TRACE(::testing::Message()
                     << s.m << "x" << s.n << "x" << s.k << " ta=" << ta
                     << " tb=" << tb << " beta=" << beta);
        const float alpha = -1.25f;
        const std::vector<float> a = RandomNonZero(s.m * s.k, 0.1f, 2, &rng_);
        const std::vector<float> b = RandomNonZero(s.k * s.n, 0.1f, 2, &rng_);
        // beta == 0 must ignore C, NaN included.
        const std::vector<float> c0 =
            beta == 0 ? std::vector<float>(s.m * s.n, std::nanf(""))
                      : RandomNonZero(s.m * s.n, 0.1f, 2, &rng_);
        std::vector<float> want = c0;
        ASSERT_TRUE(Gemm(cpu_, ta, tb, s.m, s.n, s.k, alpha, a, b, beta,
                         absl::MakeSpan(want))
                        .ok());
        DeviceArray<float> da = Upload(a), db = Upload(b), dc = Upload(c0);
        ASSERT_TRUE(Gemm(gpu_, ta, tb, s.m, s.n, s.k, alpha, da.span(),
                         db.span(), beta, dc.span())
                        .ok());
        std::vector<double> abs_sum = AbsProduct(ta, tb, s.m, s.n, s.k, a, b);
        for (size_t i = 0; i < abs_sum.size(); ++i) {
          abs_sum[i] = std::fabs(alpha) * abs_sum[i] +
                       (beta == 0 ? 0.0 : beta * std::fabs(c0[i]));
        }
        ExpectWithin(Download(dc), want, abs_sum, s.k, "gemm");
      }
    }
  }
}

TEST_F(DenseCudaTest, BiasAndReluMatchCpuExactly) {
  SCOPED_TRACE(seed_);
  const size_t rows = 300, cols = 129;
  const std::vector<float> bias = RandomNonZero(cols, 0.1f, 2, &rng_);
  const std::vector<float> y0 = RandomNonZero(rows * cols, 0.1f, 2, &rng_);
  const std::vector<float> dy0 = RandomNonZero(rows * cols, 0.1f, 2, &rng_);

  std::vector<float> y = y0;
  ASSERT_TRUE(AddBias(cpu_, rows, cols, bias, absl::MakeSpan(y)).ok());
  ASSERT_TRUE(Relu(cpu_, absl::MakeSpan(y)).ok());
  std::vector<float> dy = dy0;
  ASSERT_TRUE(ReluBackward(cpu_, y, absl::MakeSpan(dy)).ok());

  DeviceArray<float> d_bias = Upload(bias), d_y = Upload(y0),
                     d_dy = Upload(dy0);
  ASSERT_TRUE(AddBias(gpu_, rows, cols, d_bias.span(), d_y.span()).ok());
  ASSERT_TRUE(Relu(gpu_, d_y.span()).ok());
  ASSERT_TRUE(ReluBackward(gpu_, d_y.span(), d_dy.span()).ok());
  EXPECT_EQ(Download(d_y), y);
  EXPECT_EQ(Download(d_dy), dy);
}

TEST_F(DenseCudaTest, BiasGradMatchesCpu) {
  SCOPED_TRACE(seed_);
  for (size_t rows : {size_t{1}, size_t{1024}, size_t{5000}}) {
    for (size_t cols : {size_t{1}, size_t{33}, size_t{256}, size_t{300000}}) {
      if (rows * cols > 20000000) continue;
      SCOPED_TRACE(::testing::Message() << rows << "x" << cols);
      const std::vector<float> dy = RandomNonZero(rows * cols, 0.1f, 2, &rng_);
      std::vector<float> want(cols);
      ASSERT_TRUE(BiasGrad(cpu_, rows, cols, dy, absl::MakeSpan(want)).ok());
      DeviceArray<float> d_dy = Upload(dy);
      DeviceArray<float> d_db = Upload(std::vector<float>(cols, std::nanf("")));
      ASSERT_TRUE(BiasGrad(gpu_, rows, cols, d_dy.span(), d_db.span()).ok());
      std::vector<double> abs_sum(cols, 0.0);
      for (size_t k = 0; k < dy.size(); ++k)
        abs_sum[k % cols] += std::fabs(dy[k]);
      ExpectWithin(Download(d_db), want, abs_sum, rows, "bias grad");
    }
  }
}

TEST_F(DenseCudaTest, LayerForwardAndBackwardMatchCpu) {
  SCOPED_TRACE(seed_);
  for (bool relu : {false, true}) {
    DenseShape shape;
    shape.batch = 256;
    shape.in = 637;
    shape.out = 128;
    shape.relu = relu;
    const std::vector<float> x =
        RandomNonZero(shape.batch * shape.in, 0.1f, 2, &rng_);
    const std::vector<float> w =
        RandomNonZero(shape.in * shape.out, 0.01f, 0.1f, &rng_);
    const std::vector<float> b = RandomNonZero(shape.out, 0.1f, 1, &rng_);
    const std::vector<float> dy0 =
        RandomNonZero(shape.batch * shape.out, 0.1f, 2, &rng_);
    DeviceArray<float> d_x = Upload(x), d_w = Upload(w), d_b = Upload(b);

    std::vector<float> y(shape.batch * shape.out);
    ASSERT_TRUE(DenseForward(cpu_, shape, x, w, b, absl::MakeSpan(y)).ok());
    DeviceArray<float> d_y = Make<float>(y.size());
    ASSERT_TRUE(DenseForward(gpu_, shape, d_x.span(), d_w.span(), d_b.span(),
                             d_y.span())
                    .ok());
    std::vector<double> abs_y =
        AbsProduct(false, false, shape.batch, shape.out, shape.in, x, w);
    for (size_t k = 0; k < abs_y.size(); ++k)
      abs_y[k] += std::fabs(b[k % shape.out]);
    ExpectWithin(Download(d_y), y, abs_y, shape.in + 1, "forward y");

    // Both backwards see the CPU's y, so ReLU masks the same entries.
    std::vector<float> dy = dy0, dx(x.size()), dw(w.size()), db(b.size());
    ASSERT_TRUE(DenseBackward(cpu_, shape, x, w, y, absl::MakeSpan(dy),
                              absl::MakeSpan(dx), absl::MakeSpan(dw),
                              absl::MakeSpan(db))
                    .ok());
    DeviceArray<float> d_y_cpu = Upload(y), d_dy = Upload(dy0),
                       d_dx = Make<float>(x.size()),
                       d_dw = Make<float>(w.size()),
                       d_db = Make<float>(b.size());
    ASSERT_TRUE(DenseBackward(gpu_, shape, d_x.span(), d_w.span(),
                              d_y_cpu.span(), d_dy.span(), d_dx.span(),
                              d_dw.span(), d_db.span())
                    .ok());
    EXPECT_EQ(Download(d_dy), dy);  // masked dy is exact
    ExpectWithin(
        Download(d_dx), dx,
        AbsProduct(false, true, shape.batch, shape.in, shape.out, dy, w),
        shape.out, "dx");
    ExpectWithin(
        Download(d_dw), dw,
        AbsProduct(true, false, shape.in, shape.out, shape.batch, x, dy),
        shape.batch, "dw");
    std::vector<double> abs_db(b.size(), 0.0);
    for (size_t k = 0; k < dy.size(); ++k)
      abs_db[k % shape.out] += std::fabs(dy[k]);
    ExpectWithin(Download(d_db), db, abs_db, shape.batch, "db");
  }
}

}  // namespace
}  // namespace petrel
