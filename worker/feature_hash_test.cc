#include "worker/feature_hash.h"

#include "gtest/gtest.h"

namespace petrel {
namespace {

TEST(HashFeatureTest, DependsOnFieldAndValue) {
  EXPECT_EQ(HashFeature(3, "68fd1e64"), HashFeature(3, "68fd1e64"));
  EXPECT_NE(HashFeature(3, "68fd1e64"), HashFeature(4, "68fd1e64"));
  EXPECT_NE(HashFeature(3, "68fd1e64"), HashFeature(3, "68fd1e65"));
  EXPECT_NE(HashFeature(0, ""), HashFeature(1, ""));
  EXPECT_NE(HashFeature(0, "a"), HashFeature(0, absl::string_view("a\0", 2)));
}

TEST(HashFeatureTest, ValuesArePinned) {
  // Generated data sets and trained models depend on these exact keys.
  EXPECT_EQ(HashFeature(0, ""), 0x6393d51c06c618dcULL);
  EXPECT_EQ(HashFeature(13, "68fd1e64"), 0x90c09aed0b218467ULL);
}

TEST(HashFeatureTest, SpreadsOverHighAndLowBits) {
  uint64_t all_or = 0, all_and = ~0ULL;
  for (int i = 0; i < 64; ++i) {
    const uint64_t h = HashFeature(1, std::to_string(i));
    all_or |= h;
    all_and &= h;
  }
  EXPECT_EQ(all_or, ~0ULL);
  EXPECT_EQ(all_and, 0ULL);
}

TEST(CriteoIntegerBucketTest, KeepsSmallValuesAndLogSquaresLargeOnes) {
  EXPECT_EQ(CriteoIntegerBucket(-5), -5);
  EXPECT_EQ(CriteoIntegerBucket(0), 0);
  EXPECT_EQ(CriteoIntegerBucket(2), 2);
  EXPECT_EQ(CriteoIntegerBucket(3), 1);      // ln(3)^2 = 1.21
  EXPECT_EQ(CriteoIntegerBucket(10), 5);     // ln(10)^2 = 5.30
  EXPECT_EQ(CriteoIntegerBucket(100), 21);   // ln(100)^2 = 21.2
  EXPECT_EQ(CriteoIntegerBucket(1000), 47);  // ln(1000)^2 = 47.7
}

TEST(CriteoIntegerKeyTest, SmallValuesDoNotCollideWithBuckets) {
  EXPECT_EQ(CriteoIntegerKey(0, 1), HashFeature(0, "SP1"));
  EXPECT_EQ(CriteoIntegerKey(0, -1), HashFeature(0, "SP-1"));
  EXPECT_EQ(CriteoIntegerKey(0, 3), HashFeature(0, "1"));
  EXPECT_EQ(CriteoIntegerKey(0, 3), CriteoIntegerKey(0, 4));
  EXPECT_NE(CriteoIntegerKey(0, 1), CriteoIntegerKey(0, 3));
  EXPECT_NE(CriteoIntegerKey(0, 3), CriteoIntegerKey(1, 3));
  EXPECT_EQ(CriteoIntegerKey(2, 1000), HashFeature(2, "47"));
}

}  // namespace
}  // namespace petrel
