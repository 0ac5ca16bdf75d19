#include "tools/bench/bench_verify.h"

#include <set>

#include "gtest/gtest.h"

namespace petrel {
namespace {

TEST(BenchVerifyTest, PatternIsSmallIntegers) {
  SArray<float> p = MakePattern(7);
  EXPECT_EQ(p.ToVector(), (std::vector<float>{1, 2, 3, 1, 2, 3, 1}));
  // The largest exact multiple still sums exactly in float.
  const float top = static_cast<float>(kMaxExactMultiple) * kMaxPatternValue;
  EXPECT_EQ(top - 1.0f + 1.0f, top);
  EXPECT_LE(kMaxExactMultiple * kMaxPatternValue, int64_t{1} << 24);
}

TEST(BenchVerifyTest, AcceptsExactMultiple) {
  SArray<float> v = MakePattern(1000);
  for (float& x : v) x *= 5;
  EXPECT_TRUE(CheckPatternMultiple(v, 1000, 5, CheckMode::kFull).ok());
  EXPECT_TRUE(CheckPatternMultiple(v, 1000, 5, CheckMode::kSampled).ok());
}

TEST(BenchVerifyTest, RejectsWrongSize) {
  SArray<float> v = MakePattern(10);
  absl::Status s = CheckPatternMultiple(v, 11, 1, CheckMode::kSampled);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("got 10 values, expected 11"), std::string::npos);
}

TEST(BenchVerifyTest, RejectsWrongMultiple) {
  SArray<float> v = MakePattern(100);  // one push
  absl::Status s = CheckPatternMultiple(v, 100, 2, CheckMode::kSampled);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("value 0 is 1, expected 2"), std::string::npos);
}

TEST(BenchVerifyTest, SampledModeChecksFirstAndLastValue) {
  for (size_t bad : {size_t{0}, size_t{9999}}) {
    SArray<float> v = MakePattern(10000);
    v[bad] += 1;
    EXPECT_EQ(CheckPatternMultiple(v, 10000, 1, CheckMode::kSampled).code(),
              absl::StatusCode::kDataLoss)
        << bad;
  }
}

TEST(BenchVerifyTest, FullModeFindsAnyWrongValueAndNamesIt) {
  SArray<float> v = MakePattern(10000);
  v[4321] = 0;
  absl::Status s = CheckPatternMultiple(v, 10000, 1, CheckMode::kFull);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("value 4321 is 0, expected 2"), std::string::npos)
      << s;
}

TEST(BenchVerifyTest, KeysOfRanksAndRunsAreDisjoint) {
  std::set<uint64_t> keys;
  const int64_t max_k = (int64_t{1} << 20) - 1;
  for (int rank : {0, 1, (1 << 24) - 1}) {
    for (int64_t run : {int64_t{0}, int64_t{1}, max_k}) {
      for (int64_t k : {int64_t{0}, int64_t{1}, max_k}) {
        EXPECT_TRUE(keys.insert(BenchKey(rank, run, k)).second)
            << rank << " " << run << " " << k;
      }
    }
  }
  EXPECT_EQ(BenchKey(1, 0, 0), uint64_t{1} << 40);
}

TEST(BenchVerifyTest, PushSumsOfDistinctKeysAreThePattern) {
  SArray<uint64_t> keys = {5, 9, 2};
  SArray<float> vals = MakePattern(6);
  SArray<float> base = PushSumsPerPosition(keys, vals);
  EXPECT_EQ(base.data(), vals.data());  // shared, not copied
  EXPECT_EQ(MaxExactMultipleOf(base), (int64_t{1} << 24) / 3);
}

// Keys 7, 8, 7, 7 with 2 values each: key 7 gets the values of positions
// 0, 2 and 3 summed, and every position of key 7 reads that sum.
TEST(BenchVerifyTest, PushSumsAddUpRepeatedKeys) {
  SArray<uint64_t> keys = {7, 8, 7, 7};
  SArray<float> vals = MakePattern(8);  // 1 2 | 3 1 | 2 3 | 1 2
  SArray<float> base = PushSumsPerPosition(keys, vals);
  EXPECT_EQ(base.ToVector(), (std::vector<float>{4, 7, 3, 1, 4, 7, 4, 7}));
  EXPECT_EQ(MaxExactMultipleOf(base), (int64_t{1} << 24) / 7);
  // What the server answers after 5 pushes passes; one push fewer fails.
  SArray<float> got(base.size());
  for (size_t i = 0; i < got.size(); ++i) got[i] = 5 * base[i];
  EXPECT_TRUE(CheckMultipleOf(got, base, 5, CheckMode::kFull).ok());
  EXPECT_TRUE(CheckMultipleOf(got, base, 5, CheckMode::kSampled).ok());
  absl::Status s = CheckMultipleOf(got, base, 4, CheckMode::kFull);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("value 0 is 20, expected 16"), std::string::npos)
      << s;
  got[5] = 0;
  s = CheckMultipleOf(got, base, 5, CheckMode::kFull);
  EXPECT_NE(s.message().find("value 5 is 0, expected 35"), std::string::npos)
      << s;
  EXPECT_EQ(
      CheckMultipleOf(SArray<float>(3), base, 5, CheckMode::kSampled).code(),
      absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace petrel
