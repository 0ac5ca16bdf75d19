#include "tools/bench/bench_keys.h"

#include <cmath>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "gtest/gtest.h"

#include "base/zipf_sampler.h"
#include "tools/bench/bench_verify.h"

namespace petrel {
namespace {

constexpr uint64_t kNumberMask = (uint64_t{1} << 32) - 1;

// The keys of a draw that must succeed.
std::vector<uint64_t> Draw(const KeyDrawOptions& o, int rank, int64_t run) {
  absl::StatusOr<SArray<uint64_t>> keys = DrawRunKeys(o, rank, run);
  EXPECT_TRUE(keys.ok()) << keys.status();
  return keys.ok() ? keys->ToVector() : std::vector<uint64_t>();
}

TEST(BenchKeysTest, ParsesDistNames) {
  for (KeyDist d : {KeyDist::kSequential, KeyDist::kUniform, KeyDist::kZipf}) {
    absl::StatusOr<KeyDist> parsed = ParseKeyDist(KeyDistName(d));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, d);
  }
  absl::StatusOr<KeyDist> bad = ParseKeyDist("gauss");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("--key_dist=gauss"), std::string::npos);
}

TEST(BenchKeysTest, ValidatesOptions) {
  KeyDrawOptions o;
  EXPECT_TRUE(ValidateKeyDrawOptions(o).ok());
  o.key_space = 0;
  EXPECT_NE(ValidateKeyDrawOptions(o).message().find("--key_space=0"),
            std::string::npos);
  o.key_space = kMaxKeySpace + 1;
  EXPECT_FALSE(ValidateKeyDrawOptions(o).ok());
  o = KeyDrawOptions();
  o.dist = KeyDist::kUniform;
  o.num_keys = 10;
  o.key_space = 9;  // too few for 10 distinct keys
  EXPECT_EQ(ValidateKeyDrawOptions(o).code(),
            absl::StatusCode::kInvalidArgument);
  o.dist = KeyDist::kZipf;  // duplicates allowed
  EXPECT_TRUE(ValidateKeyDrawOptions(o).ok());
  for (double e : {0.0, -1.0, 11.0, std::nan("")}) {
    o.zipf_exponent = e;
    EXPECT_NE(ValidateKeyDrawOptions(o).message().find("--zipf_exponent"),
              std::string::npos)
        << e;
  }
  o = KeyDrawOptions();
  o.num_keys = 0;
  EXPECT_NE(ValidateKeyDrawOptions(o).message().find("--num_keys=0"),
            std::string::npos);
}

TEST(BenchKeysTest, SequentialIsBenchKey) {
  KeyDrawOptions o;
  o.num_keys = 5;
  absl::StatusOr<SArray<uint64_t>> keys = DrawRunKeys(o, 2, 3);
  ASSERT_TRUE(keys.ok()) << keys.status();
  for (int k = 0; k < 5; ++k) EXPECT_EQ((*keys)[k], BenchKey(2, 3, k));
}

TEST(BenchKeysTest, UniformKeysAreDistinctInRangeAndSpread) {
  KeyDrawOptions o;
  o.dist = KeyDist::kUniform;
  o.num_keys = 100000;
  o.key_space = 100000000;
  absl::StatusOr<SArray<uint64_t>> keys = DrawRunKeys(o, 1, 7);
  ASSERT_TRUE(keys.ok()) << keys.status();
  ASSERT_EQ(keys->size(), 100000u);
  absl::flat_hash_set<uint64_t> seen;
  int64_t low_half = 0;
  int64_t ascending = 0;
  for (size_t i = 0; i < keys->size(); ++i) {
    const uint64_t key = (*keys)[i];
    EXPECT_EQ(key & ~kNumberMask, RandomBenchKey(1, 7, 0));
    const uint64_t number = key & kNumberMask;
    ASSERT_LT(number, 100000000u);
    EXPECT_TRUE(seen.insert(key).second) << "duplicate key " << key;
    low_half += number < 50000000;
    if (i > 0) ascending += key > (*keys)[i - 1];
  }
  // Spread over the space, in no particular order.
  EXPECT_NEAR(low_half, 50000, 1500);
  EXPECT_NEAR(ascending, 50000, 1500);
}

TEST(BenchKeysTest, UniformFillsASmallSpace) {
  KeyDrawOptions o;
  o.dist = KeyDist::kUniform;
  o.num_keys = 64;
  o.key_space = 64;
  absl::StatusOr<SArray<uint64_t>> keys = DrawRunKeys(o, 0, 0);
  ASSERT_TRUE(keys.ok()) << keys.status();
  absl::flat_hash_set<uint64_t> seen(keys->begin(), keys->end());
  EXPECT_EQ(seen.size(), 64u);
  for (uint64_t key : seen) EXPECT_LT(key, 64u);
}

TEST(BenchKeysTest, RunsAndRanksGetOwnKeysAndRunsRepeat) {
  KeyDrawOptions o;
  o.dist = KeyDist::kZipf;
  o.num_keys = 1000;
  std::vector<uint64_t> a = Draw(o, 0, 1);
  EXPECT_EQ(a, Draw(o, 0, 1));
  absl::flat_hash_set<uint64_t> first(a.begin(), a.end());
  for (uint64_t key : Draw(o, 0, 2)) {
    EXPECT_FALSE(first.contains(key));
  }
  for (uint64_t key : Draw(o, 1, 1)) {
    EXPECT_FALSE(first.contains(key));
  }
  EXPECT_EQ(DrawRunKeys(o, kMaxRandomKeyRanks, 0).status().code(),
            absl::StatusCode::kResourceExhausted);
}

// Zipf(1.1) over 1000 values: the empirical frequencies of the top ranks
// follow k^-1.1 / H, and a 20,000-key request over 10^8 keys has many
// duplicates (the shape the issue asks for).
TEST(BenchKeysTest, ZipfHasTheRightShape) {
  const int64_t n = 1000;
  const double s = 1.1;
  ZipfSampler zipf(n, s);
  std::mt19937_64 rng(42);
  auto uniform = [&rng] { return (rng() >> 11) * 0x1.0p-53; };
  const int draws = 400000;
  std::vector<int64_t> count(n + 1, 0);
  for (int i = 0; i < draws; ++i) {
    const int64_t k = zipf.Sample(uniform);
    ASSERT_GE(k, 1);
    ASSERT_LE(k, n);
    ++count[k];
  }
  double h = 0;
  for (int64_t k = 1; k <= n; ++k) h += std::pow(k, -s);
  for (int64_t k : {1, 2, 3, 10, 100}) {
    const double want = draws * std::pow(k, -s) / h;
    EXPECT_NEAR(count[k], want, 5 * std::sqrt(want) + 0.02 * want) << k;
  }
  KeyDrawOptions o;
  o.dist = KeyDist::kZipf;
  o.num_keys = 20000;
  std::vector<uint64_t> keys = Draw(o, 0, 0);
  absl::flat_hash_map<uint64_t, int> seen;
  for (uint64_t key : keys) {
    ASSERT_LT(key & kNumberMask, 100000000u);
    ++seen[key];
  }
  // The top key alone is about 1/9 of the draws at 10^8 keys.
  EXPECT_GT(seen[RandomBenchKey(0, 0, 0)], 1500);
  EXPECT_LT(seen.size(), 15000u);
  EXPECT_GT(seen.size(), 2000u);
}

TEST(BenchKeysTest, ZipfCoversOneValueSpace) {
  ZipfSampler zipf(1, 1.1);
  std::mt19937_64 rng(1);
  auto uniform = [&rng] { return (rng() >> 11) * 0x1.0p-53; };
  for (int i = 0; i < 100; ++i) EXPECT_EQ(zipf.Sample(uniform), 1);
}

}  // namespace
}  // namespace petrel
