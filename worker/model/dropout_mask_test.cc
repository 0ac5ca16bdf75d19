#include "worker/model/dropout_mask.h"

#include <vector>

#include "gtest/gtest.h"

namespace petrel {
namespace {

std::vector<float> Mask(uint64_t seed, uint64_t step, uint64_t layer,
                        float rate, size_t n) {
  std::vector<float> m(n, -1.0f);
  FillDropoutMask(seed, step, layer, rate, absl::MakeSpan(m));
  return m;
}

TEST(DropoutMaskTest, ZeroRateKeepsEveryUnitUnscaled) {
  for (float m : Mask(1, 2, 0, 0.0f, 1000)) EXPECT_EQ(m, 1.0f);
}

// About `rate` of the entries are 0 and the rest 1 / (1 - rate), so the
// mask's mean is about 1.
TEST(DropoutMaskTest, DropsTheRateAndScalesTheRest) {
  for (float rate : {0.1f, 0.5f, 0.9f}) {
    const std::vector<float> m = Mask(7, 3, 1, rate, 200000);
    size_t dropped = 0;
    double sum = 0;
    for (float x : m) {
      if (x == 0.0f) {
        ++dropped;
      } else {
        EXPECT_FLOAT_EQ(x, 1.0f / (1.0f - rate));
      }
      sum += x;
    }
    // 200k Bernoulli draws: the standard deviation of the fraction is at
    // most 0.0012.
    EXPECT_NEAR(static_cast<double>(dropped) / m.size(), rate, 0.006) << rate;
    EXPECT_NEAR(sum / m.size(), 1.0, 0.03) << rate;
  }
}

TEST(DropoutMaskTest, SameArgumentsSameMaskOtherwiseAnother) {
  const std::vector<float> a = Mask(5, 10, 0, 0.5f, 4096);
  EXPECT_EQ(Mask(5, 10, 0, 0.5f, 4096), a);
  // A prefix of a longer mask is the shorter mask.
  std::vector<float> longer = Mask(5, 10, 0, 0.5f, 8192);
  longer.resize(4096);
  EXPECT_EQ(longer, a);
  for (const std::vector<float>& other :
       {Mask(6, 10, 0, 0.5f, 4096), Mask(5, 11, 0, 0.5f, 4096),
        Mask(5, 10, 1, 0.5f, 4096)}) {
    size_t differ = 0;
    for (size_t i = 0; i < a.size(); ++i) differ += a[i] != other[i];
    // Independent masks at rate 0.5 differ in about half the entries.
    EXPECT_GT(differ, 1800u);
    EXPECT_LT(differ, 2300u);
  }
}

}  // namespace
}  // namespace petrel
