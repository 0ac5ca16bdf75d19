// FM kernels against a float64 reference on fresh random batches, with
// worst-case float32 bounds built from testing::Gamma (m = features of the
// example, M = occurrences of a row, k = factor dim, S_f = sum_j |v_jf x_j|):
//   logit:  gamma_{4m+2k+16} (|bias| + sum |w x| + 1/2 sum_f (S_f^2 +
//           sum_j v_jf^2 x_j^2)); s_f enters squared, so its gamma_m error
//           counts twice, and the sum over f adds gamma_k.
//   sum_vx: gamma_{m} S_f.
//   dw:     gamma_{M+1} sum |dlogit x|, as for LR.
//   dv:     gamma_{M+m_max+8} sum |dlogit x| (S_f + |v x|), the forward's
//           error in s_f carried through each term of the scatter-add.
#include "kernels/fm.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

#include "kernels/sigmoid_cross_entropy.h"
#include "kernels/testing/gradient_check.h"
#include "kernels/testing/random_batch.h"
#include "kernels/testing/traced_rng.h"

namespace petrel {
namespace {

const Device kCpu = Device::Cpu();

using testing::Gamma;
using testing::RandomBatch;

struct Model {
  std::vector<float> w, v;
  size_t k = 0;
  float bias = 0.0f;
  FmParams Params() const {
    FmParams p;
    p.w = w;
    p.v = v;
    p.k = k;
    p.bias = bias;
    return p;
  }
};

Model RandomModel(size_t unique, size_t k, float v_max, std::mt19937_64* rng) {
  Model m;
  m.k = k;
  m.w = testing::RandomNonZero(unique, 0.01f, 1.0f, rng);
  m.v = testing::RandomNonZero(unique * k, 0.01f, v_max, rng);
  m.bias = testing::RandomNonZero(1, 0.01f, 1.0f, rng)[0];
  return m;
}

// Per example: the logit, its error scale, and s_f and S_f.
struct Forward {
  std::vector<double> logit, scale, s, abs_s;
};

// In double; `p` holds w (unique), then v (unique * k), then the bias.
Forward ReferenceForward(const RandomBatch& b, const std::vector<double>& p,
                         size_t k) {
  const size_t unique = b.unique.size();
  Forward out;
  for (size_t i = 0; i < b.num_examples(); ++i) {
    double linear = p.back(), scale = std::fabs(p.back()), pair = 0.0;
    std::vector<double> s(k, 0.0), abs_s(k, 0.0), sq(k, 0.0);
    for (uint32_t j = b.offsets[i]; j < b.offsets[i + 1]; ++j) {
      const size_t u = b.inverse[j];
      const double x = b.values[j];
      linear += p[u] * x;
      scale += std::fabs(p[u] * x);
      for (size_t f = 0; f < k; ++f) {
        const double t = p[unique + u * k + f] * x;
        s[f] += t;
        abs_s[f] += std::fabs(t);
        sq[f] += t * t;
      }
    }
    for (size_t f = 0; f < k; ++f) {
      pair += s[f] * s[f] - sq[f];
      scale += 0.5 * (abs_s[f] * abs_s[f] + sq[f]);
    }
    out.logit.push_back(linear + 0.5 * pair);
    out.scale.push_back(scale);
    out.s.insert(out.s.end(), s.begin(), s.end());
    out.abs_s.insert(out.abs_s.end(), abs_s.begin(), abs_s.end());
  }
  return out;
}

std::vector<double> AsParams(const Model& m) {
  std::vector<double> p(m.w.begin(), m.w.end());
  p.insert(p.end(), m.v.begin(), m.v.end());
  p.push_back(m.bias);
  return p;
}

RandomBatch FreshBatch(std::mt19937_64* rng, size_t max_examples,
                       size_t max_features) {
  std::uniform_int_distribution<size_t> examples(1, max_examples);
  std::uniform_int_distribution<size_t> pool(2, 1000);
  RandomBatch b = testing::MakeRandomBatch(examples(*rng), 0, max_features,
                                           pool(*rng), rng);
  b.Deduplicate();
  return b;
}

size_t Features(const RandomBatch& b, size_t i) {
  return b.offsets[i + 1] - b.offsets[i];
}

TEST(FmTest, ForwardMatchesFloat64Reference) {
  testing::TracedRng rng;
  std::uniform_int_distribution<size_t> dim(1, 32);
  for (int trial = 0; trial < 20; ++trial) {
    const RandomBatch b = FreshBatch(&rng, 200, 50);
    const Model m = RandomModel(b.unique.size(), dim(rng), 1.0f, &rng);
    const size_t n = b.num_examples(), k = m.k;
    std::vector<float> logits(n), sum_vx(n * k);
    ASSERT_TRUE(FmForward(kCpu, b.View(), m.Params(), absl::MakeSpan(logits),
                          absl::MakeSpan(sum_vx))
                    .ok());
    const Forward ref = ReferenceForward(b, AsParams(m), k);
    for (size_t i = 0; i < n; ++i) {
      const size_t terms = Features(b, i);
      ASSERT_LE(std::fabs(logits[i] - ref.logit[i]),
                Gamma(4 * terms + 2 * k + 16) * ref.scale[i])
          << "example " << i << " k=" << k;
      for (size_t f = 0; f < k; ++f) {
        ASSERT_LE(std::fabs(sum_vx[i * k + f] - ref.s[i * k + f]),
                  Gamma(terms + 1) * ref.abs_s[i * k + f]);
      }
    }
  }
}

TEST(FmTest, BackwardMatchesFloat64Reference) {
  testing::TracedRng rng;
  std::uniform_int_distribution<size_t> dim(1, 32);
  for (int trial = 0; trial < 20; ++trial) {
    const RandomBatch b = FreshBatch(&rng, 200, 50);
    const Model m = RandomModel(b.unique.size(), dim(rng), 1.0f, &rng);
    const size_t n = b.num_examples(), k = m.k, unique = b.unique.size();
    const auto d = testing::RandomNonZero(n, 0.01f, 1.0f, &rng);
    std::vector<float> logits(n), sum_vx(n * k);
    std::vector<float> gw(unique, 7.0f), gv(unique * k, 7.0f);  // stale
    float gb = 0.0f;
    ASSERT_TRUE(FmForward(kCpu, b.View(), m.Params(), absl::MakeSpan(logits),
                          absl::MakeSpan(sum_vx))
                    .ok());
    ASSERT_TRUE(FmBackward(kCpu, b.View(), m.Params(), sum_vx, d,
                           absl::MakeSpan(gw), absl::MakeSpan(gv), &gb)
                    .ok());
    const Forward ref = ReferenceForward(b, AsParams(m), k);
    std::vector<double> want_w(unique, 0.0), scale_w(unique, 0.0);
    std::vector<double> want_v(unique * k, 0.0), scale_v(unique * k, 0.0);
    std::vector<size_t> count(unique, 0);
    size_t max_features = 0;
    for (size_t i = 0; i < n; ++i) {
      max_features = std::max(max_features, Features(b, i));
      for (uint32_t j = b.offsets[i]; j < b.offsets[i + 1]; ++j) {
        const size_t u = b.inverse[j];
        const double dx = double{d[i]} * b.values[j];
        want_w[u] += dx;
        scale_w[u] += std::fabs(dx);
        ++count[u];
        for (size_t f = 0; f < k; ++f) {
          const double vx = double{m.v[u * k + f]} * b.values[j];
          want_v[u * k + f] += dx * (ref.s[i * k + f] - vx);
          scale_v[u * k + f] +=
              std::fabs(dx) * (ref.abs_s[i * k + f] + std::fabs(vx));
        }
      }
    }
    for (size_t u = 0; u < unique; ++u) {
      ASSERT_LE(std::fabs(gw[u] - want_w[u]), Gamma(count[u] + 1) * scale_w[u])
          << "row " << u;
      for (size_t f = 0; f < k; ++f) {
        ASSERT_LE(std::fabs(gv[u * k + f] - want_v[u * k + f]),
                  Gamma(count[u] + max_features + 8) * scale_v[u * k + f])
            << "row " << u << " factor " << f;
      }
    }
    const testing::SumWithScale want_b = testing::SumOf(d);
    EXPECT_LE(std::fabs(gb - want_b.sum), Gamma(2) * want_b.scale);
  }
}

// The kernels' float32 gradient of sum_i CE(logit_i, y_i) (forward,
// cross-entropy, backward) against central differences of the float64
// reference loss, for every parameter. Small factors keep the logits where
// the sigmoid is not saturated, so the check has teeth.
TEST(FmTest, BackwardMatchesFiniteDifferences) {
  testing::TracedRng rng;
  std::uniform_int_distribution<size_t> dim(1, 8);
  for (int trial = 0; trial < 5; ++trial) {
    const RandomBatch b = FreshBatch(&rng, 30, 12);
    const Model m = RandomModel(b.unique.size(), dim(rng), 0.3f, &rng);
    const size_t n = b.num_examples(), k = m.k, unique = b.unique.size();
    std::vector<float> logits(n), sum_vx(n * k), d(n);
    std::vector<float> gw(unique), gv(unique * k);
    float gb = 0.0f;
    ASSERT_TRUE(FmForward(kCpu, b.View(), m.Params(), absl::MakeSpan(logits),
                          absl::MakeSpan(sum_vx))
                    .ok());
    ASSERT_TRUE(
        SigmoidCrossEntropy(logits, b.labels, {}, absl::MakeSpan(d), nullptr)
            .ok());
    ASSERT_TRUE(FmBackward(kCpu, b.View(), m.Params(), sum_vx, d,
                           absl::MakeSpan(gw), absl::MakeSpan(gv), &gb)
                    .ok());
    std::vector<float> got(gw);
    got.insert(got.end(), gv.begin(), gv.end());
    got.push_back(gb);
    auto loss = [&](const std::vector<double>& p) {
      const Forward f = ReferenceForward(b, p, k);
      double sum = 0.0;
      for (size_t i = 0; i < n; ++i) {
        sum += testing::CrossEntropyOfLogit(f.logit[i], b.labels[i]);
      }
      return sum;
    };
    const std::vector<double> params = AsParams(m);
    // |d logit / d param| summed over occurrences: the size of a term.
    const Forward ref = ReferenceForward(b, params, k);
    std::vector<double> size(params.size(), 0.0);
    size.back() = static_cast<double>(n);
    for (size_t i = 0; i < n; ++i) {
      for (uint32_t j = b.offsets[i]; j < b.offsets[i + 1]; ++j) {
        const size_t u = b.inverse[j];
        const double x = std::fabs(b.values[j]);
        size[u] += x;
        for (size_t f = 0; f < k; ++f) {
          size[unique + u * k + f] +=
              x * (ref.abs_s[i * k + f] +
                   std::fabs(params[unique + u * k + f]) * x);
        }
      }
    }
    for (size_t q = 0; q < params.size(); ++q) {
      const double fd = testing::CentralDifference(loss, params, q);
      // Float32 rounding of the logits moves each dlogit by ~1e-7 (times
      // sigmoid' <= 1/4); 1e-4 of the terms' size leaves a wide margin and
      // is far below a wrong or missing term.
      EXPECT_NEAR(got[q], fd, 1e-4 * size[q] + 1e-6)
          << "parameter " << q << " of " << params.size() << " k=" << k;
    }
  }
}

TEST(FmTest, RejectsShapeMismatches) {
  std::mt19937_64 rng(testing::FreshSeed());
  RandomBatch b = testing::MakeRandomBatch(6, 1, 5, 10, &rng);
  b.Deduplicate();
  const size_t n = 6, k = 4, unique = b.unique.size();
  const Model m = RandomModel(unique, k, 1.0f, &rng);
  std::vector<float> logits(n), s(n * k), d(n, 0.5f), gw(unique),
      gv(unique * k);
  float gb = 0.0f;
  auto forward = [&](const FmParams& p, size_t logits_size, size_t s_size) {
    return FmForward(kCpu, b.View(), p,
                     absl::MakeSpan(logits).first(logits_size),
                     absl::MakeSpan(s).first(s_size))
        .code();
  };
  auto backward = [&](const FmParams& p, size_t d_size, size_t gw_size,
                      size_t gv_size) {
    return FmBackward(kCpu, b.View(), p, s, absl::MakeSpan(d).first(d_size),
                      absl::MakeSpan(gw).first(gw_size),
                      absl::MakeSpan(gv).first(gv_size), &gb)
        .code();
  };
  const auto kOk = absl::StatusCode::kOk;
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  EXPECT_EQ(forward(m.Params(), n, n * k), kOk);
  EXPECT_EQ(forward(m.Params(), n - 1, n * k), kInvalid);
  EXPECT_EQ(forward(m.Params(), n, n * k - 1), kInvalid);
  FmParams bad = m.Params();
  bad.k = k + 1;  // v no longer holds unique * k floats
  EXPECT_EQ(forward(bad, n, n * k), kInvalid);
  bad = m.Params();
  bad.w = bad.w.first(unique - 1);  // inverse names a missing row
  EXPECT_EQ(forward(bad, n, n * k), kInvalid);
  EXPECT_EQ(backward(m.Params(), n, unique, unique * k), kOk);
  EXPECT_EQ(backward(m.Params(), n - 1, unique, unique * k), kInvalid);
  EXPECT_EQ(backward(m.Params(), n, unique - 1, unique * k), kInvalid);
  EXPECT_EQ(backward(m.Params(), n, unique, unique * k - 1), kInvalid);
}

}  // namespace
}  // namespace petrel
