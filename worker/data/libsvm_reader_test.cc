#include "worker/data/libsvm_reader.h"

#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace petrel {
namespace {

TEST(LibsvmReaderTest, ParsesLabelsAndFeatures) {
  Batch batch;
  ASSERT_TRUE(ParseLibsvmLine("1 3:0.5 10:2", &batch).value_or(false));
  ASSERT_TRUE(ParseLibsvmLine("-1\t1:1  7:-2.5e-1 ", &batch).value_or(false));
  ASSERT_TRUE(
      ParseLibsvmLine("+1 qid:4 0:1e3 # c 5:5", &batch).value_or(false));
  ASSERT_TRUE(ParseLibsvmLine("0.0", &batch).value_or(false));
  ASSERT_TRUE(
      ParseLibsvmLine("1 18446744073709551615:+1", &batch).value_or(false));
  EXPECT_EQ(batch.labels, (std::vector<float>{1, 0, 1, 0, 1}));
  EXPECT_EQ(batch.offsets, (std::vector<uint32_t>{0, 2, 4, 5, 5, 6}));
  EXPECT_EQ(batch.keys,
            (std::vector<uint64_t>{3, 10, 1, 7, 0, 18446744073709551615ULL}));
  EXPECT_EQ(batch.values, (std::vector<float>{0.5f, 2, 1, -0.25f, 1000, 1}));
}

TEST(LibsvmReaderTest, FieldsAreZeroAndThereAreNoNumericFeatures) {
  ReaderOptions options;
  options.with_fields = true;
  options.with_numeric = true;
  Batch batch;
  ASSERT_TRUE(ParseLibsvmLine("1 3:0.5 10:2", options, &batch).value_or(false));
  ASSERT_TRUE(ParseLibsvmLine("0 qid:4", options, &batch).value_or(false));
  ASSERT_TRUE(
      ParseLibsvmLine("1 qid:1 7:1 # 8:1", options, &batch).value_or(false));
  EXPECT_EQ(batch.offsets, (std::vector<uint32_t>{0, 2, 2, 3}));
  EXPECT_EQ(batch.fields, std::vector<uint32_t>(3, 0));
  EXPECT_TRUE(batch.numeric.empty());
  EXPECT_EQ(batch.num_numeric, 0);
  Batch plain;
  ASSERT_TRUE(ParseLibsvmLine("1 3:0.5 10:2", &plain).value_or(false));
  EXPECT_TRUE(plain.fields.empty());
}

TEST(LibsvmReaderTest, ValuesRoundLikeStrtof) {
  const char* values[] = {"0.1",    "0.3333333", "123456.789",
                          "-7.25",  "1.",        "1e-3",
                          "2.5E2",  "0.000001",  "+3.75",
                          "-0",     "1e-40",     "123456789012345678",
                          "3.4e38", "0",         "1",
                          "7",      "9"};
  // Parsing alone: no bound on the magnitude.
  ReaderOptions unbounded;
  unbounded.max_abs_value = std::numeric_limits<float>::max();
  for (const char* text : values) {
    Batch batch;
    const std::string line = std::string("1 7:") + text;
    ASSERT_TRUE(ParseLibsvmLine(line, unbounded, &batch).value_or(false))
        << text;
    EXPECT_EQ(batch.values[0], std::strtof(text, nullptr)) << text;
  }
}

// Indices of up to 19 digits take the unchecked fast path; longer ones the
// checked one. Both must agree with the plain value.
TEST(LibsvmReaderTest, LongIndicesParseExactly) {
  Batch batch;
  ASSERT_TRUE(ParseLibsvmLine("1 9999999999999999999:1 "
                              "00000000000000000000000042:1 "
                              "10000000000000000000:1",
                              &batch)
                  .value_or(false));
  EXPECT_EQ(batch.keys, (std::vector<uint64_t>{9999999999999999999ULL, 42,
                                               10000000000000000000ULL}));
}

TEST(LibsvmReaderTest, LinesWithoutExamplesAreSkipped) {
  Batch batch;
  for (const char* line : {"", "   ", "\t", "# only a comment", "  # c"}) {
    absl::StatusOr<bool> parsed = ParseLibsvmLine(line, &batch);
    ASSERT_TRUE(parsed.ok()) << line;
    EXPECT_FALSE(*parsed) << line;
  }
  EXPECT_EQ(batch.size(), 0u);
  EXPECT_EQ(batch.offsets.size(), 1u);
}

TEST(LibsvmReaderTest, EveryMalformedKindHasItsError) {
  struct Case {
    const char* line;
    const char* error;
  };
  const Case cases[] = {
      {"2 1:1", "label '2' is not 0, 1 or -1"},
      {"0.5 1:1", "label '0.5' is not 0, 1 or -1"},
      {"abc 1:1", "label 'abc' is not a number"},
      {"nan 1:1", "label 'nan' is not a number"},
      {"+-1 1:1", "label '+-1' is not a number"},
      {"1 5", "feature '5' is not index:value"},
      {"1 x:1", "index 'x' is not a non-negative integer"},
      {"1 -3:1", "index '-3' is not a non-negative integer"},
      {"1 :1", "index '' is not a non-negative integer"},
      {"1 3.5:1", "index '3.5' is not a non-negative integer"},
      {"1 18446744073709551616:1", "index '18446744073709551616' overflows"},
      {"1 3:abc", "value 'abc' of index 3 is not a finite float"},
      {"1 3:", "value '' of index 3 is not a finite float"},
      {"1 3:inf", "value 'inf' of index 3 is not a finite float"},
      {"1 3:1e39", "value '1e39' of index 3 is not a finite float"},
      {"1 3:1:2", "value '1:2' of index 3 is not a finite float"},
  };
  for (const Case& c : cases) {
    Batch batch;
    absl::StatusOr<bool> parsed = ParseLibsvmLine(c.line, &batch);
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument)
        << c.line;
    EXPECT_NE(parsed.status().message().find(c.error), std::string::npos)
        << c.line << " gave: " << parsed.status();
    EXPECT_EQ(batch.size(), 0u) << c.line;
  }
}

TEST(LibsvmReaderTest, LongTokensAreCutInErrors) {
  Batch batch;
  absl::StatusOr<bool> parsed =
      ParseLibsvmLine("1 " + std::string(1000, 'z') + ":1", &batch);
  ASSERT_FALSE(parsed.ok());
  EXPECT_LT(parsed.status().message().size(), 100u);
}

}  // namespace
}  // namespace petrel
