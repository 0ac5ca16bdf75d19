// Sigmoid cross-entropy on CUDA against the CPU path on the same fresh
// random logits and labels (kernels/sigmoid_cross_entropy.h).
//
// Tolerance: both sides evaluate the same stable formulas in float32; the
// GPU's expf and log1pf are within 2 ulp of the correctly rounded value
// (CUDA C Programming Guide, "Mathematical Functions"), glibc's within 1,
// so each output differs by a few float32 roundings: at most 1e-6 relative
// plus 2 ulp of max(1, |z|) (2.4e-7 max(1, |z|)) absolute for values that
// cancel (p - y; a loss near 0, where z y may be fused into a multiply-add
// on the GPU and rounded on the CPU).
#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "gtest/gtest.h"

#include "kernels/cuda_test_util.h"
#include "kernels/sigmoid_cross_entropy.h"
#include "kernels/testing/random_batch.h"
#include "kernels/testing/traced_rng.h"

namespace petrel {
namespace {

class SigmoidCrossEntropyCudaTest : public testing::CudaTest {};

void ExpectClose(const std::vector<float>& got, const std::vector<float>& want,
                 const std::vector<float>& logits, const char* what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const double bound = 1e-6 * std::fabs(want[i]) +
                         2.4e-7 * std::max(1.0, std::fabs(double{logits[i]}));
    ASSERT_LE(std::fabs(double{got[i]} - want[i]), bound)
        << what << " " << i << ": cuda " << got[i] << " cpu " << want[i];
  }
}

TEST_F(SigmoidCrossEntropyCudaTest, MatchesCpuOnRandomLogits) {
  testing::TracedRng rng;
  const size_t n = 100003;
  std::vector<float> logits = testing::RandomNonZero(n, 1e-4f, 30, &rng);
  logits[0] = 1000;  // saturated both ways
  logits[1] = -1000;
  std::vector<float> labels(n);
  std::uniform_real_distribution<float> unit(0, 1);
  for (size_t i = 0; i < n; ++i) {
    labels[i] = i % 3 == 0 ? unit(rng) : static_cast<float>(rng() & 1);
  }
  std::vector<float> probs(n), dlogits(n), losses(n);
  ASSERT_TRUE(SigmoidCrossEntropy(cpu_, logits, labels, absl::MakeSpan(probs),
                                  absl::MakeSpan(dlogits),
                                  absl::MakeSpan(losses))
                  .ok());
  DeviceArray<float> d_logits = Upload(logits), d_labels = Upload(labels),
                     d_probs = Make<float>(n), d_dlogits = Make<float>(n),
                     d_losses = Make<float>(n);
  ASSERT_TRUE(SigmoidCrossEntropy(gpu_, d_logits.span(), d_labels.span(),
                                  d_probs.span(), d_dlogits.span(),
                                  d_losses.span())
                  .ok());
  ExpectClose(Download(d_probs), probs, logits, "probs");
  ExpectClose(Download(d_dlogits), dlogits, logits, "dlogits");
  ExpectClose(Download(d_losses), losses, logits, "losses");
  for (float loss : Download(d_losses)) ASSERT_TRUE(std::isfinite(loss));
}

TEST_F(SigmoidCrossEntropyCudaTest, EmptyOutputsAreNotWritten) {
  std::mt19937_64 rng(testing::FreshSeed());
  const size_t n = 1000;
  const std::vector<float> logits = testing::RandomNonZero(n, 0.1f, 5, &rng);
  const std::vector<float> labels(n, 1.0f);
  std::vector<float> losses(n);
  ASSERT_TRUE(
      SigmoidCrossEntropy(cpu_, logits, labels, {}, {}, absl::MakeSpan(losses))
          .ok());
  DeviceArray<float> d_logits = Upload(logits), d_labels = Upload(labels),
                     d_losses = Make<float>(n);
  ASSERT_TRUE(SigmoidCrossEntropy(gpu_, d_logits.span(), d_labels.span(), {},
                                  {}, d_losses.span())
                  .ok());
  ExpectClose(Download(d_losses), losses, logits, "losses");
}

}  // namespace
}  // namespace petrel
