// Dense kernels against a float64 reference on fresh random inputs (never
// zeros), with worst-case float32 bounds (testing::Gamma, u = 2^-24): an
// entry of C sums k products in some blocked order and is then scaled and
// added to beta C, so |error| <= gamma_{2k+4} (|alpha| sum |a b| + |beta c|)
// (2k covers the partial sums the blocking adds). Sums over a batch of r
// rows get gamma_{r+4} of the sum of magnitudes. DenseForward/Backward are
// also checked against central differences of a scalar loss in float64.
#include "kernels/dense.h"

#include <cmath>
#include <limits>
#include <optional>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

#include "kernels/internal/dense_cpu.h"
#include "kernels/testing/gradient_check.h"
#include "kernels/testing/random_batch.h"
#include "kernels/testing/traced_rng.h"

namespace petrel {
namespace {

using testing::Gamma;
using testing::RandomNonZero;

const Device kCpu = Device::Cpu();

struct Shape {
  size_t m, n, k;
};

// c <- alpha op(a) op(b) + beta c in double; scale gets the magnitudes.
void ReferenceGemm(bool trans_a, bool trans_b, const Shape& s, double alpha,
                   const std::vector<float>& a, const std::vector<float>& b,
                   double beta, std::vector<double>* c,
                   std::vector<double>* scale) {
  scale->assign(s.m * s.n, 0.0);
  for (size_t i = 0; i < s.m; ++i) {
    for (size_t j = 0; j < s.n; ++j) {
      double sum = 0, mag = 0;
      for (size_t p = 0; p < s.k; ++p) {
        const double t = double{trans_a ? a[p * s.m + i] : a[i * s.k + p]} *
                         (trans_b ? b[j * s.k + p] : b[p * s.n + j]);
        sum += t;
        mag += std::fabs(t);
      }
      double& out = (*c)[i * s.n + j];
      const double old = beta == 0 ? 0.0 : beta * out;
      out = alpha * sum + old;
      (*scale)[i * s.n + j] = std::fabs(alpha) * mag + std::fabs(old);
    }
  }
}

// Through Gemm on the CPU, or through one CPU kernel when `kernel` is set.
void CheckGemm(const Shape& s, bool trans_a, bool trans_b, float beta,
               std::mt19937_64* rng,
               std::optional<internal::GemmKernel> kernel = std::nullopt) {
  SCOPED_TRACE(absl::StrCat("m=", s.m, " n=", s.n, " k=", s.k, " trans_a=",
                            trans_a, " trans_b=", trans_b, " beta=", beta));
  const auto a = RandomNonZero(s.m * s.k, 0.01f, 1.0f, rng);
  const auto b = RandomNonZero(s.k * s.n, 0.01f, 1.0f, rng);
  const float alpha = RandomNonZero(1, 0.5f, 2.0f, rng)[0];
  // C is followed by guard entries that must stay as they are.
  constexpr size_t kGuard = 40;
  std::vector<float> c = RandomNonZero(s.m * s.n + kGuard, 0.01f, 1.0f, rng);
  std::vector<double> want(c.begin(), c.end() - kGuard), scale;
  const std::vector<float> guard(c.end() - kGuard, c.end());
  // beta == 0 must ignore C, NaN included.
  if (beta == 0.0f) {
    std::fill(c.begin(), c.end() - kGuard,
              std::numeric_limits<float>::quiet_NaN());
  }
  const auto c_span = absl::MakeSpan(c).subspan(0, s.m * s.n);
  if (kernel.has_value()) {
    internal::GemmCpuWith(*kernel, trans_a, trans_b, s.m, s.n, s.k, alpha, a, b,
                          beta, c_span);
  } else {
    ASSERT_TRUE(
        Gemm(kCpu, trans_a, trans_b, s.m, s.n, s.k, alpha, a, b, beta, c_span)
            .ok());
  }
  ReferenceGemm(trans_a, trans_b, s, alpha, a, b, beta, &want, &scale);
  for (size_t q = 0; q < want.size(); ++q) {
    ASSERT_LE(std::fabs(c[q] - want[q]), Gamma(2 * s.k + 4) * scale[q])
        << "entry " << q;
  }
  ASSERT_EQ(std::vector<float>(c.end() - kGuard, c.end()), guard);
}

TEST(GemmTest, MatchesFloat64ReferenceForAllTransposes) {
  testing::TracedRng rng;
  std::uniform_int_distribution<size_t> dim(1, 40);
  // Random small shapes, plus shapes that cross the block sizes of the CPU
  // GEMM (rows of 6 and 72, columns of 16 and 1024, depth of 256).
  std::vector<Shape> shapes = {{1, 1, 1},    {150, 40, 300}, {3, 1100, 5},
                               {7, 1, 129},  {1, 17, 1},     {73, 33, 257},
                               {64, 16, 128}};
  for (int i = 0; i < 12; ++i) shapes.push_back({dim(rng), dim(rng), dim(rng)});
  const float betas[] = {0.0f, 1.0f, RandomNonZero(1, 0.5f, 2.0f, &rng)[0]};
  int round = 0;
  for (const Shape& s : shapes) {
    for (int t = 0; t < 4; ++t) {
      CheckGemm(s, t & 1, t & 2, betas[round++ % 3], &rng);
      if (HasFatalFailure()) return;
    }
  }
}

// Each CPU kernel this machine has, at shapes around its tile (6 x 16 for
// the portable one, 12 x 32 for AVX-512) and blocks (rows of 72 or 144,
// depth of 256): full tiles, one row or column short or over, and
// degenerate ones.
class GemmKernelTest : public ::testing::TestWithParam<internal::GemmKernel> {};

TEST_P(GemmKernelTest, MatchesFloat64ReferenceAtTileEdges) {
  if (!internal::GemmKernelAvailable(GetParam())) {
    GTEST_SKIP() << "this build or CPU lacks the kernel";
  }
  testing::TracedRng rng;
  std::uniform_int_distribution<size_t> dim(1, 70);
  std::vector<Shape> shapes = {
      {12, 32, 1},   {11, 31, 7},  {13, 33, 2},  {24, 64, 256}, {25, 63, 257},
      {6, 16, 3},    {5, 17, 255}, {145, 40, 9}, {73, 1, 300},  {1, 95, 513},
      {150, 20, 40}, {2, 1, 1},    {1, 16, 17}};
  for (int i = 0; i < 6; ++i) shapes.push_back({dim(rng), dim(rng), dim(rng)});
  const float betas[] = {0.0f, 1.0f, RandomNonZero(1, 0.5f, 2.0f, &rng)[0]};
  for (const Shape& s : shapes) {
    for (int t = 0; t < 4; ++t) {
      for (float beta : betas) {
        CheckGemm(s, t & 1, t & 2, beta, &rng, GetParam());
        if (HasFatalFailure()) return;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Kernels, GemmKernelTest,
    ::testing::Values(internal::GemmKernel::kPortable,
                      internal::GemmKernel::kAvx512),
    [](const ::testing::TestParamInfo<internal::GemmKernel>& info) {
      return info.param == internal::GemmKernel::kAvx512 ? "Avx512"
                                                         : "Portable";
    });

TEST(GemmTest, EmptyProductScalesC) {
  std::vector<float> c = {1.0f, -2.0f};
  ASSERT_TRUE(
      Gemm(kCpu, false, false, 2, 1, 0, 1.0f, {}, {}, 3.0f, absl::MakeSpan(c))
          .ok());
  EXPECT_EQ(c, (std::vector<float>{3.0f, -6.0f}));
  ASSERT_TRUE(
      Gemm(kCpu, true, true, 2, 1, 0, 1.0f, {}, {}, 0.0f, absl::MakeSpan(c))
          .ok());
  EXPECT_EQ(c, (std::vector<float>{0.0f, 0.0f}));
  EXPECT_TRUE(Gemm(kCpu, false, false, 0, 0, 5, 1.0f, {}, {}, 0.0f, {}).ok());
}

TEST(DenseTest, BiasAndReluMatchReference) {
  std::mt19937_64 rng(testing::FreshSeed());
  const size_t rows = 37, cols = 21;
  const auto bias = RandomNonZero(cols, 0.01f, 1.0f, &rng);
  const auto y0 = RandomNonZero(rows * cols, 0.01f, 1.0f, &rng);
  std::vector<float> y = y0;
  ASSERT_TRUE(AddBias(kCpu, rows, cols, bias, absl::MakeSpan(y)).ok());
  for (size_t q = 0; q < y.size(); ++q) {
    ASSERT_EQ(y[q], y0[q] + bias[q % cols]);  // one rounding, as in float
  }
  std::vector<float> dbias(cols, 123.0f);
  ASSERT_TRUE(BiasGrad(kCpu, rows, cols, y0, absl::MakeSpan(dbias)).ok());
  for (size_t c = 0; c < cols; ++c) {
    double sum = 0, mag = 0;
    for (size_t r = 0; r < rows; ++r) {
      sum += y0[r * cols + c];
      mag += std::fabs(y0[r * cols + c]);
    }
    ASSERT_LE(std::fabs(dbias[c] - sum), Gamma(rows + 4) * mag);
  }
  std::vector<float> relu = y0;
  ASSERT_TRUE(Relu(kCpu, absl::MakeSpan(relu)).ok());
  std::vector<float> dy = RandomNonZero(y0.size(), 0.01f, 1.0f, &rng);
  const std::vector<float> dy0 = dy;
  ASSERT_TRUE(ReluBackward(kCpu, relu, absl::MakeSpan(dy)).ok());
  for (size_t q = 0; q < y0.size(); ++q) {
    ASSERT_EQ(relu[q], y0[q] > 0 ? y0[q] : 0.0f);
    ASSERT_EQ(dy[q], y0[q] > 0 ? dy0[q] : 0.0f);
  }
}

struct Layer {
  DenseShape shape;
  std::vector<float> x, w, b;
};

Layer RandomLayer(size_t max_dim, bool relu, std::mt19937_64* rng) {
  std::uniform_int_distribution<size_t> dim(1, max_dim);
  Layer l;
  l.shape.batch = dim(*rng);
  l.shape.in = dim(*rng);
  l.shape.out = dim(*rng);
  l.shape.relu = relu;
  l.x = RandomNonZero(l.shape.batch * l.shape.in, 0.01f, 1.0f, rng);
  l.w = RandomNonZero(l.shape.in * l.shape.out, 0.01f, 1.0f, rng);
  l.b = RandomNonZero(l.shape.out, 0.01f, 1.0f, rng);
  return l;
}

// x W + b in double, with the magnitudes sum |x w| + |b|.
void ReferencePreActivation(const Layer& l, std::vector<double>* z,
                            std::vector<double>* scale) {
  const DenseShape& s = l.shape;
  z->assign(s.batch * s.out, 0.0);
  scale->assign(z->size(), 0.0);
  for (size_t r = 0; r < s.batch; ++r) {
    for (size_t o = 0; o < s.out; ++o) {
      double sum = l.b[o], mag = std::fabs(l.b[o]);
      for (size_t i = 0; i < s.in; ++i) {
        const double t = double{l.x[r * s.in + i]} * l.w[i * s.out + o];
        sum += t;
        mag += std::fabs(t);
      }
      (*z)[r * s.out + o] = sum;
      (*scale)[r * s.out + o] = mag;
    }
  }
}

class DenseLayerTest : public ::testing::TestWithParam<bool> {};

TEST_P(DenseLayerTest, ForwardAndBackwardMatchFloat64Reference) {
  testing::TracedRng rng;
  for (int trial = 0; trial < 10; ++trial) {
    const Layer l = RandomLayer(50, GetParam(), &rng);
    const DenseShape& s = l.shape;
    std::vector<float> y(s.batch * s.out);
    ASSERT_TRUE(DenseForward(kCpu, s, l.x, l.w, l.b, absl::MakeSpan(y)).ok());
    std::vector<double> z, scale;
    ReferencePreActivation(l, &z, &scale);
    for (size_t q = 0; q < y.size(); ++q) {
      const double want = s.relu ? std::fmax(z[q], 0.0) : z[q];
      ASSERT_LE(std::fabs(y[q] - want), Gamma(2 * s.in + 6) * scale[q]);
    }
    const auto dy0 = RandomNonZero(y.size(), 0.01f, 1.0f, &rng);
    std::vector<float> dy = dy0, dx(s.batch * s.in, 123.0f),
                       dw(s.in * s.out, 123.0f), db(s.out, 123.0f);
    ASSERT_TRUE(DenseBackward(kCpu, s, l.x, l.w, y, absl::MakeSpan(dy),
                              absl::MakeSpan(dx), absl::MakeSpan(dw),
                              absl::MakeSpan(db))
                    .ok());
    // The mask comes from the kernel's own y, as the header defines it.
    std::vector<double> g(dy0.size());
    for (size_t q = 0; q < g.size(); ++q) {
      g[q] = (!s.relu || y[q] > 0) ? dy0[q] : 0.0;
      ASSERT_EQ(dy[q], static_cast<float>(g[q]));
    }
    for (size_t o = 0; o < s.out; ++o) {
      double sum = 0, mag = 0;
      for (size_t r = 0; r < s.batch; ++r) {
        sum += g[r * s.out + o];
        mag += std::fabs(g[r * s.out + o]);
      }
      ASSERT_LE(std::fabs(db[o] - sum), Gamma(s.batch + 4) * mag);
      for (size_t i = 0; i < s.in; ++i) {
        double dw_sum = 0, dw_mag = 0;
        for (size_t r = 0; r < s.batch; ++r) {
          const double t = l.x[r * s.in + i] * g[r * s.out + o];
          dw_sum += t;
          dw_mag += std::fabs(t);
        }
        ASSERT_LE(std::fabs(dw[i * s.out + o] - dw_sum),
                  Gamma(2 * s.batch + 4) * dw_mag);
      }
    }
    for (size_t r = 0; r < s.batch; ++r) {
      for (size_t i = 0; i < s.in; ++i) {
        double sum = 0, mag = 0;
        for (size_t o = 0; o < s.out; ++o) {
          const double t = g[r * s.out + o] * l.w[i * s.out + o];
          sum += t;
          mag += std::fabs(t);
        }
        ASSERT_LE(std::fabs(dx[r * s.in + i] - sum),
                  Gamma(2 * s.out + 4) * mag);
      }
    }
  }
}

// L = sum r .* act(x W + b) for random r: the kernels' dL/dW, dL/db and
// dL/dx (float32) against central differences of L in float64. L is
// piecewise linear in each parameter, so the differences are exact away
// from ReLU kinks; layers with a pre-activation within 1e-3 of a kink are
// redrawn.
TEST_P(DenseLayerTest, BackwardMatchesFiniteDifferences) {
  testing::TracedRng rng;
  for (int trial = 0; trial < 5; ++trial) {
    Layer l;
    std::vector<double> z, scale;
    bool near_kink = true;
    while (near_kink) {
      l = RandomLayer(7, GetParam(), &rng);
      ReferencePreActivation(l, &z, &scale);
      near_kink = false;
      for (double v : z) near_kink |= std::fabs(v) < 1e-3;
    }
    const DenseShape& s = l.shape;
    const auto r = RandomNonZero(s.batch * s.out, 0.01f, 1.0f, &rng);
    std::vector<float> y(r.size()), dy = r, dx(s.batch * s.in),
                                    dw(s.in * s.out), db(s.out);
    ASSERT_TRUE(DenseForward(kCpu, s, l.x, l.w, l.b, absl::MakeSpan(y)).ok());
    ASSERT_TRUE(DenseBackward(kCpu, s, l.x, l.w, y, absl::MakeSpan(dy),
                              absl::MakeSpan(dx), absl::MakeSpan(dw),
                              absl::MakeSpan(db))
                    .ok());
    // Parameters: x, then w, then b.
    std::vector<double> p(l.x.begin(), l.x.end());
    p.insert(p.end(), l.w.begin(), l.w.end());
    p.insert(p.end(), l.b.begin(), l.b.end());
    const size_t w0 = l.x.size(), b0 = w0 + l.w.size();
    auto loss = [&](const std::vector<double>& q) {
      double sum = 0;
      for (size_t row = 0; row < s.batch; ++row) {
        for (size_t o = 0; o < s.out; ++o) {
          double v = q[b0 + o];
          for (size_t i = 0; i < s.in; ++i)
            v += q[row * s.in + i] * q[w0 + i * s.out + o];
          if (s.relu) v = std::fmax(v, 0.0);
          sum += r[row * s.out + o] * v;
        }
      }
      return sum;
    };
    const std::vector<float> got = [&] {
      std::vector<float> all(dx);
      all.insert(all.end(), dw.begin(), dw.end());
      all.insert(all.end(), db.begin(), db.end());
      return all;
    }();
    for (size_t q = 0; q < p.size(); ++q) {
      const double fd = testing::CentralDifference(loss, p, q);
      // The float32 gradient sums at most 7 products of magnitude <= 1;
      // 1e-5 is far above its error and far below one wrong term (>= 1e-4).
      EXPECT_NEAR(got[q], fd, 1e-5) << "parameter " << q;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Activation, DenseLayerTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Relu" : "Identity";
                         });

TEST(DenseTest, BackwardWithoutDxSkipsIt) {
  std::mt19937_64 rng(testing::FreshSeed());
  const Layer l = RandomLayer(10, true, &rng);
  const DenseShape& s = l.shape;
  std::vector<float> y(s.batch * s.out), dw(s.in * s.out), db(s.out);
  ASSERT_TRUE(DenseForward(kCpu, s, l.x, l.w, l.b, absl::MakeSpan(y)).ok());
  std::vector<float> dy = RandomNonZero(y.size(), 0.01f, 1.0f, &rng);
  EXPECT_TRUE(DenseBackward(kCpu, s, l.x, l.w, y, absl::MakeSpan(dy), {},
                            absl::MakeSpan(dw), absl::MakeSpan(db))
                  .ok());
}

TEST(DenseTest, RejectsShapeMismatches) {
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  std::vector<float> a(6, 1.0f), b(12, 1.0f), c(8, 1.0f);  // 2x3 3x4 2x4
  auto gemm = [&](size_t m, size_t n, size_t k, size_t na, size_t nb,
                  size_t nc) {
    return Gemm(kCpu, false, true, m, n, k, 1.0f,
                absl::MakeConstSpan(a).first(na),
                absl::MakeConstSpan(b).first(nb), 0.0f,
                absl::MakeSpan(c).first(nc))
        .code();
  };
  EXPECT_EQ(gemm(2, 4, 3, 6, 12, 8), absl::StatusCode::kOk);
  EXPECT_EQ(gemm(2, 4, 3, 5, 12, 8), kInvalid);
  EXPECT_EQ(gemm(2, 4, 3, 6, 11, 8), kInvalid);
  EXPECT_EQ(gemm(2, 4, 3, 6, 12, 7), kInvalid);
  const size_t huge = size_t{1} << 40;
  EXPECT_EQ(gemm(huge, huge, 0, 0, 0, 0), kInvalid);  // m x n overflows
  EXPECT_EQ(
      AddBias(kCpu, 2, 4, absl::MakeConstSpan(b).first(3), absl::MakeSpan(c))
          .code(),
      kInvalid);
  EXPECT_EQ(
      AddBias(kCpu, 3, 4, absl::MakeConstSpan(b).first(4), absl::MakeSpan(c))
          .code(),
      kInvalid);
  EXPECT_EQ(BiasGrad(kCpu, 2, 4, c, absl::MakeSpan(b).first(5)).code(),
            kInvalid);
  EXPECT_EQ(BiasGrad(kCpu, 2, 4, a, absl::MakeSpan(b).first(4)).code(),
            kInvalid);
  EXPECT_EQ(ReluBackward(kCpu, a, absl::MakeSpan(c)).code(), kInvalid);

  DenseShape s;
  s.batch = 2;
  s.in = 3;
  s.out = 4;
  s.relu = true;
  std::vector<float> x(6, 1.0f), w(12, 1.0f), bias(4, 1.0f), y(8, 5.0f);
  EXPECT_EQ(DenseForward(kCpu, s, x, w, absl::MakeConstSpan(bias).first(3),
                         absl::MakeSpan(y))
                .code(),
            kInvalid);
  EXPECT_EQ(y, std::vector<float>(8, 5.0f));  // not written
  EXPECT_EQ(DenseForward(kCpu, s, absl::MakeConstSpan(x).first(5), w, bias,
                         absl::MakeSpan(y))
                .code(),
            kInvalid);
  std::vector<float> dy(8, -1.0f), dx(6), dw(12), db(4);
  auto backward = [&](size_t ndx, size_t ndw, size_t ndb, size_t ny) {
    return DenseBackward(kCpu, s, x, w, absl::MakeConstSpan(y).first(ny),
                         absl::MakeSpan(dy), absl::MakeSpan(dx).first(ndx),
                         absl::MakeSpan(dw).first(ndw),
                         absl::MakeSpan(db).first(ndb))
        .code();
  };
  EXPECT_EQ(backward(5, 12, 4, 8), kInvalid);
  EXPECT_EQ(backward(6, 11, 4, 8), kInvalid);
  EXPECT_EQ(backward(6, 12, 3, 8), kInvalid);
  EXPECT_EQ(backward(6, 12, 4, 7), kInvalid);
  EXPECT_EQ(dy, std::vector<float>(8, -1.0f));  // checked before writing
  EXPECT_EQ(backward(6, 12, 4, 8), absl::StatusCode::kOk);
}

}  // namespace
}  // namespace petrel
