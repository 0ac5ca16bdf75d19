#include "worker/data/cross_features.h"

#include <memory>
#include <string>

#include "gtest/gtest.h"

#include "worker/data/criteo_reader.h"
#include "worker/data/feature_hash.h"
#include "worker/testing/temp_file.h"

namespace petrel {
namespace {

TEST(CrossKeyTest, DependsOnThePairAndBothKeys) {
  const uint64_t k = CrossKey(1, 2, 10, 20);
  EXPECT_EQ(k, CrossKey(1, 2, 10, 20));
  EXPECT_NE(k, CrossKey(1, 3, 10, 20));
  EXPECT_NE(k, CrossKey(1, 2, 20, 10));
  EXPECT_NE(k, CrossKey(1, 2, 11, 20));
  EXPECT_NE(k, CrossKey(1, 2, 10, 21));
  EXPECT_NE(k, ~uint64_t{0});
}

Batch TwoExamples() {
  Batch b;
  b.labels = {1, 0};
  // Example 0: fields 0, 1, 2; example 1: fields 0 and 2 (1 missing).
  b.keys = {100, 101, 102, 200, 202};
  b.values = {1, 1, 1, 1, 1};
  b.fields = {0, 1, 2, 0, 2};
  b.offsets = {0, 3, 5};
  return b;
}

TEST(AppendCrossesTest, AppendsPresentPairsWithTheirFields) {
  Batch b = TwoExamples();
  AppendCrosses({{0, 1}, {0, 2}}, 3, /*keep_fields=*/true, &b);
  ASSERT_EQ(b.offsets, (std::vector<uint32_t>{0, 5, 8}));
  EXPECT_EQ(b.keys[3], CrossKey(0, 1, 100, 101));
  EXPECT_EQ(b.keys[4], CrossKey(0, 2, 100, 102));
  EXPECT_EQ(b.keys[7], CrossKey(0, 2, 200, 202));  // no (0, 1): 1 missing
  EXPECT_EQ(b.fields, (std::vector<uint32_t>{0, 1, 2, 3, 4, 0, 2, 4}));
  EXPECT_EQ(b.values.size(), 8u);
  EXPECT_EQ(b.labels, (std::vector<float>{1, 0}));
}

TEST(AppendCrossesTest, DropsFieldsWhenNotKept) {
  Batch b = TwoExamples();
  AppendCrosses({{1, 2}}, 3, /*keep_fields=*/false, &b);
  EXPECT_TRUE(b.fields.empty());
  EXPECT_EQ(b.nnz(), 6u);
  Batch none = TwoExamples();
  AppendCrosses({}, 3, false, &none);
  EXPECT_TRUE(none.fields.empty());
  EXPECT_EQ(none.nnz(), 5u);
}

TEST(CrossingReaderTest, OpenReaderAppendsTheCrosses) {
  const std::string line0 =
      "1\t1" + std::string(12, '\t') + "\tab\tcd" + std::string(24, '\t');
  const std::string line1 =
      "0\t" + std::string(12, '\t') + "\tab\t" + std::string(24, '\t');
  ReaderOptions ro;
  ro.format = DataFormat::kCriteo;
  ro.files = {WriteTempFile("crossed", line0 + "\n" + line1 + "\n")};
  ro.crosses = {{13, 14}, {0, 13}};
  ro.cross_base_fields = 39;
  absl::StatusOr<std::unique_ptr<Reader>> reader = OpenReader(ro);
  ASSERT_TRUE(reader.ok()) << reader.status();
  Batch b;
  ASSERT_TRUE(*(*reader)->Next(10, &b));
  ASSERT_EQ(b.size(), 2u);
  // Example 0: I1, C1, C2 and both crosses; example 1: C1 only.
  ASSERT_EQ(b.offsets, (std::vector<uint32_t>{0, 5, 6}));
  EXPECT_EQ(b.keys[3],
            CrossKey(13, 14, HashFeature(13, "ab"), HashFeature(14, "cd")));
  EXPECT_EQ(b.keys[4],
            CrossKey(0, 13, CriteoIntegerKey(0, 1), HashFeature(13, "ab")));
  EXPECT_TRUE(b.fields.empty());  // not asked for
  ro.with_fields = true;
  reader = OpenReader(ro);
  ASSERT_TRUE(reader.ok());
  ASSERT_TRUE(*(*reader)->Next(10, &b));
  EXPECT_EQ(b.fields, (std::vector<uint32_t>{0, 13, 14, 39, 40, 13}));
  ASSERT_TRUE((*reader)->Rewind().ok());
  ASSERT_TRUE(*(*reader)->Next(1, &b));
  EXPECT_EQ(b.size(), 1u);
}

}  // namespace
}  // namespace petrel
