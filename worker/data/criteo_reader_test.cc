#include "worker/data/criteo_reader.h"

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "gtest/gtest.h"

#include "worker/data/feature_hash.h"

namespace petrel {
namespace {

// A Criteo line: label, 13 integer fields, 26 categorical fields.
std::string MakeLine(const std::string& label,
                     std::vector<std::string> integers,
                     std::vector<std::string> categories) {
  integers.resize(13);
  categories.resize(26);
  std::vector<std::string> fields = {label};
  fields.insert(fields.end(), integers.begin(), integers.end());
  fields.insert(fields.end(), categories.begin(), categories.end());
  return absl::StrJoin(fields, "\t");
}

// Integer fields I1 = 1, I5 = 1000 and I13 = -2; the others are missing.
std::vector<std::string> SampleIntegers() {
  std::vector<std::string> integers(13);
  integers[0] = "1";
  integers[4] = "1000";
  integers[12] = "-2";
  return integers;
}

TEST(CriteoReaderTest, HashesFieldsAndSkipsMissingOnes) {
  Batch batch;
  const std::vector<std::string> integers = SampleIntegers();
  std::vector<std::string> categories(26);
  categories[0] = "68fd1e64";
  categories[25] = "3a171ecb";
  ASSERT_TRUE(ParseCriteoLine(MakeLine("1", integers, categories), &batch)
                  .value_or(false));
  ASSERT_TRUE(ParseCriteoLine(MakeLine("0", {}, {}), &batch).value_or(false));
  EXPECT_EQ(batch.labels, (std::vector<float>{1, 0}));
  EXPECT_EQ(batch.offsets, (std::vector<uint32_t>{0, 5, 5}));
  EXPECT_EQ(batch.keys,
            (std::vector<uint64_t>{
                CriteoIntegerKey(0, 1), CriteoIntegerKey(4, 1000),
                CriteoIntegerKey(12, -2), HashFeature(13, "68fd1e64"),
                HashFeature(38, "3a171ecb")}));
  EXPECT_EQ(batch.values, std::vector<float>(5, 1.0f));
}

ReaderOptions WithFieldsAndNumeric() {
  ReaderOptions options;
  options.with_fields = true;
  options.with_numeric = true;
  return options;
}

TEST(CriteoReaderTest, FieldsAndNumericOnlyWhenAskedFor) {
  const std::string line = MakeLine("1", {"7"}, {"ab"});
  Batch batch;
  ASSERT_TRUE(ParseCriteoLine(line, &batch).value_or(false));
  EXPECT_TRUE(batch.fields.empty());
  EXPECT_TRUE(batch.numeric.empty());
  EXPECT_EQ(batch.num_numeric, 0);
  ReaderOptions options;
  options.with_fields = true;
  ASSERT_TRUE(ParseCriteoLine(line, options, &batch).value_or(false));
  EXPECT_EQ(batch.fields, (std::vector<uint32_t>{0, 13}));
  EXPECT_TRUE(batch.numeric.empty());
}

TEST(CriteoReaderTest, FieldsNumberEveryPositionByColumn) {
  const std::vector<std::string> integers = SampleIntegers();
  std::vector<std::string> categories(26);
  categories[0] = "68fd1e64";
  categories[7] = "00000000";
  categories[25] = "3a171ecb";
  Batch batch;
  ASSERT_TRUE(ParseCriteoLine(MakeLine("1", integers, categories),
                              WithFieldsAndNumeric(), &batch)
                  .value_or(false));
  ASSERT_TRUE(
      ParseCriteoLine(MakeLine("0", {}, {"x"}), WithFieldsAndNumeric(), &batch)
          .value_or(false));
  EXPECT_EQ(batch.offsets, (std::vector<uint32_t>{0, 6, 7}));
  EXPECT_EQ(batch.fields, (std::vector<uint32_t>{0, 4, 12, 13, 20, 38, 13}));
  EXPECT_EQ(batch.keys[4], HashFeature(20, "00000000"));
}

TEST(CriteoReaderTest, NumericIsLog1pOfNonNegativeIntegers) {
  std::vector<std::string> integers(13);
  integers[0] = "1";
  integers[1] = "0";
  integers[4] = "1000";
  integers[11] = "9223372036854775807";
  integers[12] = "-2";  // negative: clamped to 0
  Batch batch;
  ASSERT_TRUE(ParseCriteoLine(MakeLine("1", integers, {}),
                              WithFieldsAndNumeric(), &batch)
                  .value_or(false));
  ASSERT_TRUE(ParseCriteoLine(MakeLine("0", {"", "3"}, {}),
                              WithFieldsAndNumeric(), &batch)
                  .value_or(false));
  ASSERT_EQ(batch.num_numeric, 13);
  ASSERT_EQ(batch.numeric.size(), 26u);
  std::vector<float> expected(26, 0.0f);  // missing columns give 0
  expected[0] = std::log1p(1.0f);
  expected[4] = std::log1p(1000.0f);
  expected[11] = static_cast<float>(std::log1p(9223372036854775807.0));
  expected[13 + 1] = std::log1p(3.0f);
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_FLOAT_EQ(batch.numeric[i], expected[i]) << "index " << i;
  }
}

TEST(CriteoReaderTest, SameTextInDifferentFieldsGivesDifferentKeys) {
  Batch batch;
  ASSERT_TRUE(ParseCriteoLine(MakeLine("0", {"5", "5"}, {"ab", "ab"}), &batch)
                  .value_or(false));
  ASSERT_EQ(batch.keys.size(), 4u);
  EXPECT_NE(batch.keys[0], batch.keys[1]);
  EXPECT_NE(batch.keys[2], batch.keys[3]);
}

TEST(CriteoReaderTest, EmptyLineIsSkipped) {
  Batch batch;
  absl::StatusOr<bool> parsed = ParseCriteoLine("", &batch);
  ASSERT_TRUE(parsed.ok());
  EXPECT_FALSE(*parsed);
}

TEST(CriteoReaderTest, EveryMalformedKindHasItsError) {
  struct Case {
    std::string line;
    const char* error;
  };
  const std::string full = MakeLine("1", {}, {});
  const Case cases[] = {
      {full + "\t", "line has 41 tab-separated fields, expected 40"},
      {full.substr(0, full.size() - 1), "line has 39 tab-separated fields"},
      {"1 2 3", "line has 1 tab-separated fields"},
      {MakeLine("", {}, {}), "label is empty"},
      {MakeLine("2", {}, {}), "label '2' is not 0, 1 or -1"},
      {MakeLine("yes", {}, {}), "label 'yes' is not a number"},
      {MakeLine("1", {"1.5"}, {}), "integer field I1 '1.5' is not an integer"},
      {MakeLine("1", {"", "abc"}, {}),
       "integer field I2 'abc' is not an integer"},
      {MakeLine("1", {"", "", "99999999999999999999"}, {}),
       "integer field I3 '99999999999999999999' overflows 64 bits"},
  };
  for (const Case& c : cases) {
    Batch batch;
    absl::StatusOr<bool> parsed = ParseCriteoLine(c.line, &batch);
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument)
        << c.line;
    EXPECT_NE(parsed.status().message().find(c.error), std::string::npos)
        << c.line << " gave: " << parsed.status();
    EXPECT_EQ(batch.size(), 0u);
    parsed = ParseCriteoLine(c.line, WithFieldsAndNumeric(), &batch);
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument)
        << c.line;
    // A half-parsed example may leave positions behind; Truncate drops them
    // from every part.
    batch.Truncate(0);
    EXPECT_TRUE(batch.keys.empty() && batch.fields.empty() &&
                batch.numeric.empty())
        << c.line;
  }
}

TEST(CriteoReaderTest, IntegerSpellingsParseAsBefore) {
  struct Case {
    std::string text;
    int64_t value;
  };
  const Case cases[] = {{"0", 0},
                        {"-0", 0},
                        {"+5", 5},
                        {"007", 7},
                        {"-123456789012345678", -123456789012345678},
                        {"1234567890123456789", 1234567890123456789},
                        {"9223372036854775807", INT64_MAX},
                        {"-9223372036854775808", INT64_MIN},
                        {"+0000000000000000000042", 42}};
  for (const Case& c : cases) {
    Batch batch;
    std::vector<std::string> integers(13);
    integers[3] = c.text;
    ASSERT_TRUE(ParseCriteoLine(MakeLine("0", integers, {}), &batch).ok())
        << c.text;
    EXPECT_EQ(batch.keys, std::vector<uint64_t>{CriteoIntegerKey(3, c.value)})
        << c.text;
  }
  for (const char* bad : {"-", "+", "+-1", "--1", "1-", " 1", "1 ", "0x10",
                          "9223372036854775808", "12345678901234567a"}) {
    Batch batch;
    std::vector<std::string> integers(13);
    integers[0] = bad;
    EXPECT_FALSE(ParseCriteoLine(MakeLine("0", integers, {}), &batch).ok())
        << bad;
  }
}

// The line splitter works 16 bytes at a time: lines of every length, with
// tabs at every position of a 16-byte word, must split as a plain split.
TEST(CriteoReaderTest, SplitsLikeAPlainSplitAtEveryAlignment) {
  std::mt19937 rng(7);
  for (int round = 0; round < 2000; ++round) {
    std::vector<std::string> integers(13), categories(26);
    std::vector<uint64_t> keys;
    for (int i = 0; i < 13; ++i) {
      if (rng() % 3 == 0) continue;
      const int64_t v = static_cast<int64_t>(rng() % 100000) - 50;
      integers[i] = std::to_string(v);
      keys.push_back(CriteoIntegerKey(i, v));
    }
    for (int j = 0; j < 26; ++j) {
      if (rng() % 3 == 0) continue;
      categories[j] = std::string(rng() % 20 + 1, 'a' + rng() % 26);
      keys.push_back(HashFeature(13 + j, categories[j]));
    }
    Batch batch;
    const std::string line = MakeLine("1", integers, categories);
    ASSERT_TRUE(ParseCriteoLine(line, &batch).value_or(false)) << line;
    EXPECT_EQ(batch.keys, keys) << line;
    Batch extra;
    EXPECT_FALSE(ParseCriteoLine(line + "\tx", &extra).ok()) << line;
  }
}

}  // namespace
}  // namespace petrel
