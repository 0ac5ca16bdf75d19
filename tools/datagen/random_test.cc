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

}  // namespace
}  // namespace datagen
}  // namespace petrel
