#include "server/initializer.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace petrel {
namespace {

Initializer Make(InitializerKind kind, float scale, uint64_t seed, int table) {
  InitializerConfig c;
  c.kind = kind;
  c.scale = scale;
  c.seed = seed;
  absl::StatusOr<Initializer> init = Initializer::Create(c, table);
  EXPECT_TRUE(init.ok()) << init.status();
  return *init;
}

std::vector<float> Row(const Initializer& init, uint64_t key, int dim) {
  std::vector<float> row(dim, 123.0f);
  init.Fill(key, row.data(), dim);
  return row;
}

TEST(InitializerTest, ZerosFillsZeros) {
  Initializer init = Make(InitializerKind::kZeros, 1.0f, 7, 0);
  EXPECT_EQ(Row(init, 5, 3), std::vector<float>(3, 0.0f));
}

TEST(InitializerTest, SameSeedTableKeyGiveSameRow) {
  for (InitializerKind kind :
       {InitializerKind::kUniform, InitializerKind::kNormal}) {
    Initializer a = Make(kind, 0.5f, 42, 3);
    Initializer b = Make(kind, 0.5f, 42, 3);
    for (uint64_t key : {0ULL, 1ULL, 99ULL, ~0ULL}) {
      EXPECT_EQ(Row(a, key, 8), Row(b, key, 8));
    }
    // A prefix of columns does not depend on dim.
    std::vector<float> long_row = Row(a, 9, 8);
    std::vector<float> short_row = Row(a, 9, 3);
    EXPECT_EQ(short_row,
              std::vector<float>(long_row.begin(), long_row.begin() + 3));
  }
}

TEST(InitializerTest, SeedTableAndKeyEachChangeTheRow) {
  Initializer base = Make(InitializerKind::kUniform, 1.0f, 1, 0);
  EXPECT_NE(Row(base, 10, 4),
            Row(Make(InitializerKind::kUniform, 1.0f, 2, 0), 10, 4));
  EXPECT_NE(Row(base, 10, 4),
            Row(Make(InitializerKind::kUniform, 1.0f, 1, 1), 10, 4));
  EXPECT_NE(Row(base, 10, 4), Row(base, 11, 4));
  std::vector<float> row = Row(base, 10, 4);
  EXPECT_NE(row[0], row[1]);
}

TEST(InitializerTest, UniformStaysInRangeWithMeanNearZero) {
  Initializer init = Make(InitializerKind::kUniform, 0.25f, 3, 0);
  double sum = 0;
  const int n = 20000;
  for (int k = 0; k < n; ++k) {
    float v = Row(init, k, 1)[0];
    ASSERT_LE(std::fabs(v), 0.25f);
    sum += v;
  }
  EXPECT_NEAR(sum / n, 0.0, 0.01);
}

TEST(InitializerTest, NormalHasTheRequestedStddev) {
  Initializer init = Make(InitializerKind::kNormal, 2.0f, 3, 0);
  double sum = 0, sq = 0;
  const int n = 20000;
  for (int k = 0; k < n; ++k) {
    std::vector<float> row = Row(init, k, 2);
    for (float v : row) {
      sum += v;
      sq += v * v;
    }
  }
  const double mean = sum / (2 * n);
  EXPECT_NEAR(mean, 0.0, 0.05);
  EXPECT_NEAR(std::sqrt(sq / (2 * n) - mean * mean), 2.0, 0.05);
}

TEST(InitializerTest, RejectsBadScale) {
  InitializerConfig c;
  c.kind = InitializerKind::kNormal;
  c.scale = -1.0f;
  EXPECT_EQ(Initializer::Create(c, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
  c.scale = NAN;
  EXPECT_EQ(Initializer::Create(c, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace petrel
