#include "base/zipf_sampler.h"

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace petrel {
namespace {

double Uniform01(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

TEST(ZipfSamplerTest, MatchesTheZipfProbabilities) {
  constexpr int kValues = 10;
  constexpr int kN = 400000;
  const double exponent = 1.1;
  ZipfSampler zipf(kValues, exponent);
  std::mt19937_64 rng(3);
  auto uniform = [&rng] { return Uniform01(rng); };
  std::vector<int> counts(kValues + 1);
  for (int i = 0; i < kN; ++i) {
    const int64_t k = zipf.Sample(uniform);
    ASSERT_GE(k, 1);
    ASSERT_LE(k, kValues);
    ++counts[k];
  }
  double norm = 0;
  for (int k = 1; k <= kValues; ++k) norm += std::pow(k, -exponent);
  for (int k = 1; k <= kValues; ++k) {
    const double p = std::pow(k, -exponent) / norm;
    EXPECT_NEAR(counts[k] / double{kN}, p, 4 * std::sqrt(p / kN) + 1e-4)
        << "k=" << k;
  }
}

TEST(ZipfSamplerTest, HandlesOneValueAndLargeVocabularies) {
  std::mt19937_64 rng(9);
  auto uniform = [&rng] { return Uniform01(rng); };
  ZipfSampler one(1, 1.1);
  EXPECT_EQ(one.Sample(uniform), 1);
  ZipfSampler big(1000000, 1.1);
  int64_t ones = 0, tail = 0;
  for (int i = 0; i < 100000; ++i) {
    const int64_t k = big.Sample(uniform);
    ASSERT_GE(k, 1);
    ASSERT_LE(k, 1000000);
    ones += k == 1;
    tail += k > 1000;
  }
  // P(1) = 1 / H(10^6, 1.1) = 0.1239; P(k > 1000) = 0.3097.
  EXPECT_NEAR(ones / 1e5, 0.1239, 0.005);
  EXPECT_NEAR(tail / 1e5, 0.3097, 0.006);
}

}  // namespace
}  // namespace petrel
