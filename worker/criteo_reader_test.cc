#include "worker/criteo_reader.h"

#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "gtest/gtest.h"

#include "worker/feature_hash.h"

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

TEST(CriteoReaderTest, HashesFieldsAndSkipsMissingOnes) {
  Batch batch;
  std::vector<std::string> integers(13);
  integers[0] = "1";
  integers[4] = "1000";
  integers[12] = "-2";
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
  }
}

}  // namespace
}  // namespace petrel
