#include "worker/data/holdout.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace petrel {
namespace {

std::string Line(int i) {
  return absl::StrCat(i % 2, " ", i, ":1 ", i * 7 + 3, ":0.5");
}

TEST(HoldoutTest, SplitIsDeterministic) {
  for (int i = 0; i < 1000; ++i) {
    EXPECT_EQ(IsHeldOut(Line(i), 0.1, 7), IsHeldOut(Line(i), 0.1, 7));
  }
}

TEST(HoldoutTest, FractionIsRespected) {
  constexpr int kLines = 100000;
  for (double fraction : {0.01, 0.1, 0.5}) {
    int held = 0;
    for (int i = 0; i < kLines; ++i) held += IsHeldOut(Line(i), fraction, 0);
    // Binomial: the standard deviation is at most 0.5 * sqrt(n) = 158;
    // 5 of them.
    EXPECT_NEAR(held, fraction * kLines, 800) << fraction;
  }
}

TEST(HoldoutTest, NothingHeldOutAtZero) {
  for (int i = 0; i < 1000; ++i) EXPECT_FALSE(IsHeldOut(Line(i), 0, 3));
}

TEST(HoldoutTest, PartsAreDisjointAndCoverEverything) {
  HoldoutOptions train{HoldoutPart::kTrain, 0.2, 11};
  HoldoutOptions held{HoldoutPart::kHeldOut, 0.2, 11};
  HoldoutOptions all;
  int both = 0, neither = 0, in_held = 0;
  for (int i = 0; i < 10000; ++i) {
    const bool t = KeepLine(train, Line(i));
    const bool h = KeepLine(held, Line(i));
    both += t && h;
    neither += !t && !h;
    in_held += h;
    EXPECT_TRUE(KeepLine(all, Line(i)));
  }
  EXPECT_EQ(both, 0);
  EXPECT_EQ(neither, 0);
  EXPECT_GT(in_held, 1500);
  EXPECT_LT(in_held, 2500);
}

TEST(HoldoutTest, SeedChangesTheSplit) {
  int differ = 0;
  for (int i = 0; i < 1000; ++i) {
    differ += IsHeldOut(Line(i), 0.5, 1) != IsHeldOut(Line(i), 0.5, 2);
  }
  EXPECT_GT(differ, 300);
}

}  // namespace
}  // namespace petrel
