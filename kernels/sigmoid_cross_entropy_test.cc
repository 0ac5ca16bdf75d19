// SigmoidCrossEntropy against a float64 reference. Each float32 result
// passes through a handful of roundings (exp, an add, a divide, a
// subtract), so the bounds are 8 u (u = 2^-24) relative to the magnitudes
// involved: p within 8 u p, dlogit within 8 u (p + |p - y|), and the loss sum
// within 8 u sum_i (|max(z,0)| + |z y| + log1p(exp(-|z|))).
#include "kernels/sigmoid_cross_entropy.h"

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

#include "kernels/testing/random_batch.h"
#include "kernels/testing/traced_rng.h"

namespace petrel {
namespace {

const double kU = std::ldexp(1.0, -24);

TEST(SigmoidCrossEntropyTest, MatchesFloat64Reference) {
  testing::TracedRng rng;
  std::uniform_int_distribution<size_t> size(1, 2000);
  std::uniform_real_distribution<float> soft(0.05f, 0.95f);
  for (int trial = 0; trial < 20; ++trial) {
    const size_t n = size(rng);
    const auto logits = testing::RandomNonZero(n, 0.001f, 30.0f, &rng);
    std::vector<float> labels(n);
    for (size_t i = 0; i < n; ++i) {
      // Mostly hard labels; some soft ones, which the formula also covers.
      labels[i] = i % 5 == 4 ? soft(rng) : static_cast<float>(rng() % 2);
    }
    std::vector<float> probs(n), dlogits(n);
    double loss = 0.0;
    ASSERT_TRUE(SigmoidCrossEntropy(logits, labels, absl::MakeSpan(probs),
                                    absl::MakeSpan(dlogits), &loss)
                    .ok());
    double want_loss = 0.0, loss_scale = 0.0;
    for (size_t i = 0; i < n; ++i) {
      const double z = logits[i], y = labels[i];
      const double p = 1.0 / (1.0 + std::exp(-z));
      const double l1 = std::log1p(std::exp(-std::fabs(z)));
      want_loss += std::fmax(z, 0.0) - z * y + l1;
      loss_scale += std::fmax(z, 0.0) + std::fabs(z * y) + l1;
      ASSERT_LE(std::fabs(probs[i] - p), 8 * kU * p) << "example " << i;
      ASSERT_LE(std::fabs(dlogits[i] - (p - y)),
                8 * kU * (p + std::fabs(p - y)))
          << "example " << i;
    }
    EXPECT_LE(std::fabs(loss - want_loss), 8 * kU * loss_scale);
  }
}

TEST(SigmoidCrossEntropyTest, ExtremeLogitsStayFinite) {
  const std::vector<float> logits = {1000.0f,  -1000.0f, 1000.0f,
                                     -1000.0f, 88.5f,    -104.0f};
  const std::vector<float> labels = {1, 1, 0, 0, 1, 0};
  std::vector<float> probs(6), dlogits(6);
  double loss = 0.0;
  ASSERT_TRUE(SigmoidCrossEntropy(logits, labels, absl::MakeSpan(probs),
                                  absl::MakeSpan(dlogits), &loss)
                  .ok());
  // Two confident mistakes cost |z| = 1000 each; the rest cost ~0.
  EXPECT_NEAR(loss, 2000.0, 1e-3);
  EXPECT_EQ(probs, (std::vector<float>{1, 0, 1, 0, 1, 0}));
  EXPECT_EQ(dlogits, (std::vector<float>{0, -1, 1, 0, 0, 0}));
}

TEST(SigmoidCrossEntropyTest, EmptyOutputsAreSkipped) {
  const std::vector<float> logits = {0.5f, -2.0f}, labels = {1, 0};
  std::vector<float> probs(2);
  double loss = -1.0;
  ASSERT_TRUE(
      SigmoidCrossEntropy(logits, labels, absl::MakeSpan(probs), {}, &loss)
          .ok());
  EXPECT_GT(loss, 0.0);
  EXPECT_FLOAT_EQ(probs[0], 1.0f / (1.0f + std::exp(-0.5f)));
  std::vector<float> dlogits(2);
  ASSERT_TRUE(
      SigmoidCrossEntropy(logits, labels, {}, absl::MakeSpan(dlogits), nullptr)
          .ok());
  EXPECT_FLOAT_EQ(dlogits[1], 1.0f / (1.0f + std::exp(2.0f)));
}

TEST(SigmoidCrossEntropyTest, RejectsShapeMismatches) {
  std::vector<float> logits(4, 0.5f), labels(3, 1.0f), out(4), short_out(3);
  double loss = 0.0;
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  EXPECT_EQ(SigmoidCrossEntropy(logits, labels, {}, {}, &loss).code(),
            kInvalid);
  labels.push_back(0.0f);
  EXPECT_EQ(SigmoidCrossEntropy(logits, labels, absl::MakeSpan(short_out),
                                absl::MakeSpan(out), &loss)
                .code(),
            kInvalid);
  EXPECT_EQ(SigmoidCrossEntropy(logits, labels, absl::MakeSpan(out),
                                absl::MakeSpan(short_out), &loss)
                .code(),
            kInvalid);
  EXPECT_TRUE(SigmoidCrossEntropy(logits, labels, absl::MakeSpan(out),
                                  absl::MakeSpan(out), &loss)
                  .ok());
}

// The device-neutral form on the CPU: the same probs and dlogits as the host
// form (the same float operations), and per-example losses within the
// header's 8 u bound of the float64 loss.
TEST(SigmoidCrossEntropyDeviceTest, MatchesHostFormAndReference) {
  testing::TracedRng rng;
  const size_t n = std::uniform_int_distribution<size_t>(1, 2000)(rng);
  const auto logits = testing::RandomNonZero(n, 0.01f, 30.0f, &rng);
  std::vector<float> labels(n);
  std::uniform_real_distribution<float> soft(0.05f, 0.95f);
  for (float& y : labels) y = soft(rng);
  std::vector<float> probs(n), dlogits(n), losses(n), want_probs(n),
      want_dlogits(n);
  ASSERT_TRUE(
      SigmoidCrossEntropy(Device::Cpu(), logits, labels, absl::MakeSpan(probs),
                          absl::MakeSpan(dlogits), absl::MakeSpan(losses))
          .ok());
  double unused = 0;
  ASSERT_TRUE(SigmoidCrossEntropy(logits, labels, absl::MakeSpan(want_probs),
                                  absl::MakeSpan(want_dlogits), &unused)
                  .ok());
  EXPECT_EQ(probs, want_probs);
  EXPECT_EQ(dlogits, want_dlogits);
  for (size_t i = 0; i < n; ++i) {
    const double z = logits[i], y = labels[i];
    const double e = std::exp(-std::fabs(z));
    const double loss = std::fmax(z, 0.0) - z * y + std::log1p(e);
    ASSERT_LE(std::fabs(losses[i] - loss),
              8 * kU * (std::fmax(z, 0.0) + std::fabs(z * y) + std::log1p(e)))
        << i;
  }
}

TEST(SigmoidCrossEntropyDeviceTest, WritesOnlyRequestedOutputs) {
  const std::vector<float> logits = {0.5f, -2.0f}, labels = {1, 0};
  std::vector<float> losses(2, -1.0f);
  ASSERT_TRUE(SigmoidCrossEntropy(Device::Cpu(), logits, labels, {}, {},
                                  absl::MakeSpan(losses))
                  .ok());
  EXPECT_FLOAT_EQ(losses[0], std::log1p(std::exp(-0.5f)));
  EXPECT_FLOAT_EQ(losses[1], std::log1p(std::exp(-2.0f)));
}

TEST(SigmoidCrossEntropyDeviceTest, RejectsShapeMismatches) {
  std::vector<float> logits(4, 0.5f), labels(4, 1.0f), out(4), short_out(3);
  const Device cpu = Device::Cpu();
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  EXPECT_EQ(SigmoidCrossEntropy(cpu, logits, absl::MakeSpan(labels).first(3),
                                {}, {}, absl::MakeSpan(out))
                .code(),
            kInvalid);
  EXPECT_EQ(SigmoidCrossEntropy(cpu, logits, labels, absl::MakeSpan(short_out),
                                {}, {})
                .code(),
            kInvalid);
  EXPECT_EQ(SigmoidCrossEntropy(cpu, logits, labels, {},
                                absl::MakeSpan(short_out), {})
                .code(),
            kInvalid);
  EXPECT_EQ(SigmoidCrossEntropy(cpu, logits, labels, {}, {},
                                absl::MakeSpan(short_out))
                .code(),
            kInvalid);
  EXPECT_TRUE(SigmoidCrossEntropy(cpu, logits, labels, {}, {}, {}).ok());
}

}  // namespace
}  // namespace petrel
