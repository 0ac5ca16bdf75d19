#include "tools/datagen/random.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace petrel {
namespace datagen {
namespace {

TEST(RngTest, IsDeterministicBySeed) {
  Rng a(42), b(42), c(43);
  for (int i = 0; i < 10; ++i) {
    const uint64_t x = a.Next();
    EXPECT_EQ(x, b.Next());
    EXPECT_NE(x, c.Next());
  }
}

TEST(RngTest, UniformAndNormalHaveTheirMoments) {
  Rng rng(1);
  constexpr int kN = 200000;
  double usum = 0, nsum = 0, nsq = 0;
  for (int i = 0; i < kN; ++i) {
    const double u = rng.Uniform();
    ASSERT_GE(u, 0);
    ASSERT_LT(u, 1);
    usum += u;
    const double z = rng.Normal();
    nsum += z;
    nsq += z * z;
  }
  EXPECT_NEAR(usum / kN, 0.5, 0.005);
  EXPECT_NEAR(nsum / kN, 0, 0.01);
  EXPECT_NEAR(nsq / kN, 1, 0.02);
}

TEST(HashNormalTest, HasZeroMeanAndUnitVariance) {
  double sum = 0, sq = 0;
  constexpr int kN = 100000;
  Rng rng(5);
  for (int i = 0; i < kN; ++i) {
    const double z = HashNormal(rng.Next());
    sum += z;
    sq += z * z;
  }
  EXPECT_NEAR(sum / kN, 0, 0.01);
  EXPECT_NEAR(sq / kN, 1, 0.02);
  EXPECT_EQ(HashNormal(12345), HashNormal(12345));
}

TEST(ZipfSamplerTest, MatchesTheZipfProbabilities) {
  constexpr int kValues = 10;
  constexpr int kN = 400000;
  const double exponent = 1.1;
  ZipfSampler zipf(kValues, exponent);
  Rng rng(3);
  std::vector<int> counts(kValues + 1);
  for (int i = 0; i < kN; ++i) {
    const int64_t k = zipf.Sample(&rng);
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
  Rng rng(9);
  ZipfSampler one(1, 1.1);
  EXPECT_EQ(one.Sample(&rng), 1);
  ZipfSampler big(1000000, 1.1);
  int64_t ones = 0, tail = 0;
  for (int i = 0; i < 100000; ++i) {
    const int64_t k = big.Sample(&rng);
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
}  // namespace datagen
}  // namespace petrel
