// LR kernels against a float64 reference on fresh random batches. Error
// bounds are the worst-case float32 summation bounds of testing::Gamma:
// logit[i] is a sum of m_i products plus the bias, so |error| <=
// gamma_{m_i+1} (|bias| + sum |w x|); a gradient row with M occurrences has
// |error| <= gamma_{M+1} sum |dlogit x|.
#include "kernels/lr.h"

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

struct Reference {
  std::vector<double> logits;  // [n]
  std::vector<double> scale;   // [n] |bias| + sum |w x|
  std::vector<size_t> terms;   // [n] features per example
};

Reference ReferenceForward(const RandomBatch& b, const std::vector<float>& w,
                           double bias) {
  Reference ref;
  for (size_t i = 0; i < b.num_examples(); ++i) {
    double sum = bias, scale = std::fabs(bias);
    for (uint32_t j = b.offsets[i]; j < b.offsets[i + 1]; ++j) {
      const double t = double{w[b.inverse[j]]} * b.values[j];
      sum += t;
      scale += std::fabs(t);
    }
    ref.logits.push_back(sum);
    ref.scale.push_back(scale);
    ref.terms.push_back(b.offsets[i + 1] - b.offsets[i]);
  }
  return ref;
}

// Gradient sums per unique row, their magnitudes and occurrence counts.
void ReferenceBackward(const RandomBatch& b, const std::vector<float>& d,
                       std::vector<double>* grad, std::vector<double>* scale,
                       std::vector<size_t>* count) {
  grad->assign(b.unique.size(), 0.0);
  scale->assign(b.unique.size(), 0.0);
  count->assign(b.unique.size(), 0);
  for (size_t i = 0; i < b.num_examples(); ++i) {
    for (uint32_t j = b.offsets[i]; j < b.offsets[i + 1]; ++j) {
      const double t = double{d[i]} * b.values[j];
      (*grad)[b.inverse[j]] += t;
      (*scale)[b.inverse[j]] += std::fabs(t);
      ++(*count)[b.inverse[j]];
    }
  }
}

RandomBatch FreshBatch(std::mt19937_64* rng, size_t max_examples) {
  std::uniform_int_distribution<size_t> examples(1, max_examples);
  std::uniform_int_distribution<size_t> pool(2, 2000);
  RandomBatch batch =
      testing::MakeRandomBatch(examples(*rng), 0, 50, pool(*rng), rng);
  batch.Deduplicate();
  return batch;
}

TEST(LrTest, ForwardMatchesFloat64Reference) {
  testing::TracedRng rng;
  for (int trial = 0; trial < 20; ++trial) {
    const RandomBatch b = FreshBatch(&rng, 300);
    const auto w = testing::RandomNonZero(b.unique.size(), 0.01f, 1.0f, &rng);
    const float bias = testing::RandomNonZero(1, 0.01f, 1.0f, &rng)[0];
    std::vector<float> logits(b.num_examples());
    ASSERT_TRUE(
        LrForward(kCpu, b.View(), w, bias, absl::MakeSpan(logits)).ok());
    const Reference ref = ReferenceForward(b, w, bias);
    for (size_t i = 0; i < logits.size(); ++i) {
      ASSERT_LE(std::fabs(logits[i] - ref.logits[i]),
                Gamma(ref.terms[i] + 1) * ref.scale[i])
          << "example " << i;
    }
  }
}

TEST(LrTest, BackwardMatchesFloat64Reference) {
  testing::TracedRng rng;
  for (int trial = 0; trial < 20; ++trial) {
    const RandomBatch b = FreshBatch(&rng, 300);
    const auto d = testing::RandomNonZero(b.num_examples(), 0.01f, 1.0f, &rng);
    // Stale contents must be overwritten.
    std::vector<float> grad(b.unique.size(), 123.0f);
    float grad_bias = 0.0f;
    ASSERT_TRUE(
        LrBackward(kCpu, b.View(), d, absl::MakeSpan(grad), &grad_bias).ok());
    std::vector<double> want, scale;
    std::vector<size_t> count;
    ReferenceBackward(b, d, &want, &scale, &count);
    for (size_t u = 0; u < grad.size(); ++u) {
      ASSERT_LE(std::fabs(grad[u] - want[u]), Gamma(count[u] + 1) * scale[u])
          << "row " << u;
    }
    const testing::SumWithScale bias_want = testing::SumOf(d);
    EXPECT_LE(std::fabs(grad_bias - bias_want.sum), Gamma(2) * bias_want.scale);
  }
}

// The gradient of the batch loss sum_i CE(logit_i, y_i), computed by the
// kernels in float32 (forward, cross-entropy, backward), against central
// differences of the float64 reference loss.
TEST(LrTest, BackwardMatchesFiniteDifferences) {
  testing::TracedRng rng;
  for (int trial = 0; trial < 5; ++trial) {
    const RandomBatch b = FreshBatch(&rng, 40);
    const auto w = testing::RandomNonZero(b.unique.size(), 0.01f, 1.0f, &rng);
    const float bias = testing::RandomNonZero(1, 0.01f, 1.0f, &rng)[0];
    const size_t n = b.num_examples();
    std::vector<float> logits(n), dlogits(n), grad(w.size());
    float grad_bias = 0.0f;
    ASSERT_TRUE(
        LrForward(kCpu, b.View(), w, bias, absl::MakeSpan(logits)).ok());
    ASSERT_TRUE(SigmoidCrossEntropy(logits, b.labels, {},
                                    absl::MakeSpan(dlogits), nullptr)
                    .ok());
    ASSERT_TRUE(
        LrBackward(kCpu, b.View(), dlogits, absl::MakeSpan(grad), &grad_bias)
            .ok());
    // Loss as a function of every parameter in double; parameter w.size()
    // is the bias.
    std::vector<double> params(w.begin(), w.end());
    params.push_back(bias);
    auto loss = [&](const std::vector<double>& p) {
      double sum = 0.0;
      for (size_t i = 0; i < n; ++i) {
        double z = p.back();
        for (uint32_t j = b.offsets[i]; j < b.offsets[i + 1]; ++j) {
          z += p[b.inverse[j]] * b.values[j];
        }
        sum += testing::CrossEntropyOfLogit(z, b.labels[i]);
      }
      return sum;
    };
    std::vector<double> abs_x(params.size(), 0.0);  // sum |dz/dparam|
    for (size_t j = 0; j < b.keys.size(); ++j)
      abs_x[b.inverse[j]] += std::fabs(b.values[j]);
    abs_x.back() = static_cast<double>(n);
    for (size_t q = 0; q < params.size(); ++q) {
      const double fd = testing::CentralDifference(loss, params, q);
      const double got = q < grad.size() ? grad[q] : grad_bias;
      // dlogit errors are at most a few float ulps of the logits times
      // sigmoid' <= 1/4; 1e-4 of sum |x| leaves a wide margin above them
      // and far below a wrong term (|x| >= 0.1).
      EXPECT_NEAR(got, fd, 1e-4 * abs_x[q] + 1e-6) << "parameter " << q;
    }
  }
}

TEST(LrTest, RejectsShapeMismatches) {
  std::mt19937_64 rng(testing::FreshSeed());
  RandomBatch b = testing::MakeRandomBatch(8, 1, 5, 10, &rng);
  b.Deduplicate();
  std::vector<float> w(b.unique.size(), 0.5f), out(8), d(8, 0.5f);
  float gb = 0.0f;
  auto code = [](const absl::Status& s) { return s.code(); };
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  EXPECT_EQ(code(LrForward(kCpu, b.View(), w, 0, absl::MakeSpan(out).first(7))),
            kInvalid);
  EXPECT_EQ(
      code(LrForward(kCpu, b.View(), absl::MakeSpan(w).first(w.size() - 1), 0,
                     absl::MakeSpan(out))),
      kInvalid);  // inverse names a row past the weights
  EXPECT_EQ(code(LrBackward(kCpu, b.View(), absl::MakeSpan(d).first(7),
                            absl::MakeSpan(w), &gb)),
            kInvalid);
  SparseBatchView bad = b.View();
  bad.values = bad.values.first(bad.values.size() - 1);
  EXPECT_EQ(code(LrForward(kCpu, bad, w, 0, absl::MakeSpan(out))), kInvalid);
  EXPECT_EQ(code(LrBackward(kCpu, bad, d, absl::MakeSpan(w), &gb)), kInvalid);
  bad = b.View();
  bad.offsets = {};
  EXPECT_EQ(code(LrForward(kCpu, bad, w, 0, {})), kInvalid);
  std::vector<uint32_t> offsets = b.offsets;
  std::swap(offsets[3], offsets[4]);  // decreasing
  bad = b.View();
  bad.offsets = offsets;
  EXPECT_EQ(code(LrForward(kCpu, bad, w, 0, absl::MakeSpan(out))), kInvalid);
  offsets = b.offsets;
  offsets.back() -= 1;  // does not end at nnz
  bad.offsets = offsets;
  EXPECT_EQ(code(LrBackward(kCpu, bad, d, absl::MakeSpan(w), &gb)), kInvalid);
  offsets = b.offsets;
  offsets.front() = 1;
  bad.offsets = offsets;
  EXPECT_EQ(code(LrForward(kCpu, bad, w, 0, absl::MakeSpan(out))), kInvalid);
}

TEST(LrTest, EmptyExampleGetsTheBias) {
  const std::vector<uint32_t> offsets = {0, 0, 1, 1};
  const std::vector<uint32_t> inverse = {0};
  const std::vector<float> values = {2.0f}, w = {0.25f};
  SparseBatchView view;
  view.offsets = offsets;
  view.inverse = inverse;
  view.values = values;
  std::vector<float> logits(3);
  ASSERT_TRUE(LrForward(kCpu, view, w, -1.5f, absl::MakeSpan(logits)).ok());
  EXPECT_EQ(logits, (std::vector<float>{-1.5f, -1.0f, -1.5f}));
}

}  // namespace
}  // namespace petrel
