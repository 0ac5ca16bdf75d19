#include "worker/data/feature_hash.h"

#include <cstdint>
#include <string>
#include <vector>

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

// The reference CriteoIntegerKey: format the bucket (or "SP" and the value)
// and hash it. The reader's table lookups must agree everywhere.
uint64_t ReferenceIntegerKey(uint32_t field, int64_t value) {
  const std::string text = value <= 2
                               ? "SP" + std::to_string(value)
                               : std::to_string(CriteoIntegerBucket(value));
  return HashFeature(field, text);
}

TEST(CriteoIntegerKeyTest, MatchesTheReferenceForEveryFieldAndManyValues) {
  std::vector<int64_t> values = {
      INT64_MIN, -1000000, -17,  -16,           -1,       0, 1, 2,
      3,         4095,     4096, INT64_MAX - 1, INT64_MAX};
  for (int64_t v = 1; v < (int64_t{1} << 62); v = v * 3 + 1) {
    values.push_back(v);
  }
  for (int64_t v = -20; v < 5000; ++v) values.push_back(v);
  for (uint32_t field : {0u, 5u, 12u, 13u, 40u}) {
    for (int64_t v : values) {
      ASSERT_EQ(CriteoIntegerKey(field, v), ReferenceIntegerKey(field, v))
          << field << " " << v;
    }
  }
}

TEST(HashFeatureTest, LongValuesAndFieldsBeyondTheSeedTable) {
  const std::string long_value(100, 'z');
  EXPECT_NE(HashFeature(0, long_value), HashFeature(0, long_value.substr(1)));
  EXPECT_NE(HashFeature(70, "ab"), HashFeature(6, "ab"));
  EXPECT_EQ(HashFeature(70, "ab"), HashFeature(70, "ab"));
}

}  // namespace
}  // namespace petrel
