#include "worker/data/cross_selection.h"

#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

#include "worker/data/feature_hash.h"
#include "worker/testing/temp_file.h"

namespace petrel {
namespace {

// A uniform number in [0, 1) from a hash of (a, b, c).
double Unit(uint64_t a, uint64_t b, uint64_t c) {
  return static_cast<double>(Mix64(Mix64(Mix64(a) ^ b) ^ c) >> 11) /
         9007199254740992.0;
}

// `rows` rows of `fields` fields with `values` values each (some missing);
// the label's logit sums a weight per (field, value) and, for each planted
// pair, a weight per (value a, value b) of +-strength.
CrossSample Synthetic(int fields, int values, size_t rows,
                      const std::vector<CrossPair>& planted, double strength,
                      uint64_t seed) {
  CrossSample sample(fields);
  std::vector<uint32_t> ids(fields);
  for (size_t r = 0; r < rows; ++r) {
    std::vector<int> v(fields);
    double z = -1.0;
    for (int f = 0; f < fields; ++f) {
      v[f] = static_cast<int>(Unit(seed, r, f) * values);
      const bool missing = Unit(seed + 1, r, f) < 0.05;
      ids[f] = missing ? CrossSample::kMissing
                       : static_cast<uint32_t>(Mix64(f * 1000 + v[f]) >> 32);
      if (!missing) z += (Unit(seed + 2, f, v[f]) - 0.5);
    }
    for (const CrossPair& p : planted) {
      if (ids[p.a] == CrossSample::kMissing ||
          ids[p.b] == CrossSample::kMissing) {
        continue;
      }
      z += Unit(seed + 3, p.a * 64 + p.b, v[p.a] * 1000 + v[p.b]) < 0.5
               ? -strength
               : strength;
    }
    const float label = Unit(seed + 4, r, 0) < 1 / (1 + std::exp(-z)) ? 1 : 0;
    sample.AddRow(ids, label);
  }
  return sample;
}

std::vector<CrossPair> Pairs(const CrossSelection& s) {
  std::vector<CrossPair> out;
  for (const ScoredPair& p : s.chosen) out.push_back(p.pair);
  return out;
}

bool Contains(const std::vector<CrossPair>& v, CrossPair p) {
  for (const CrossPair& q : v) {
    if (q == p) return true;
  }
  return false;
}

TEST(CrossSelectionTest, PicksExactlyThePlantedPairs) {
  const std::vector<CrossPair> planted = {{0, 3}, {2, 5}};
  const CrossSample sample = Synthetic(8, 30, 60000, planted, 1.0, 7);
  CrossSelectionOptions options;
  options.table_bits = 16;
  const CrossSelection s = SelectCrossPairs(sample, options);
  const std::vector<CrossPair> chosen = Pairs(s);
  ASSERT_EQ(chosen.size(), 2u) << s.chosen.size();
  EXPECT_TRUE(Contains(chosen, {0, 3}));
  EXPECT_TRUE(Contains(chosen, {2, 5}));
  EXPECT_GT(s.chosen[1].gain, 3e-4);
  EXPECT_GE(s.chosen[0].gain, s.chosen[1].gain);
  ASSERT_FALSE(s.runners_up.empty());
  EXPECT_LT(s.runners_up[0].gain, 3e-4);
  EXPECT_EQ(s.rows, 60000u);
  EXPECT_GT(s.base_logloss, 0.3);
}

TEST(CrossSelectionTest, AtMostMaxPairsBestFirst) {
  const std::vector<CrossPair> planted = {{0, 3}, {2, 5}};
  const CrossSample sample = Synthetic(8, 30, 60000, planted, 1.0, 7);
  CrossSelectionOptions options;
  options.table_bits = 16;
  options.max_pairs = 1;
  const CrossSelection all = SelectCrossPairs(sample, {});
  const CrossSelection one = SelectCrossPairs(sample, options);
  ASSERT_EQ(one.chosen.size(), 1u);
  ASSERT_FALSE(all.chosen.empty());
  EXPECT_EQ(one.chosen[0].pair, all.chosen[0].pair);
}

TEST(CrossSelectionTest, NothingOnDataWithoutInteractions) {
  const CrossSample sample = Synthetic(8, 30, 60000, {}, 0, 11);
  const CrossSelection s = SelectCrossPairs(sample, {});
  EXPECT_TRUE(s.chosen.empty())
      << s.chosen[0].pair.a << "-" << s.chosen[0].pair.b << " "
      << s.chosen[0].gain;
  EXPECT_EQ(s.runners_up.size(), 5u);
}

TEST(CrossSelectionTest, Deterministic) {
  const CrossSample sample = Synthetic(6, 20, 20000, {{1, 4}}, 1.0, 3);
  const CrossSelection a = SelectCrossPairs(sample, {});
  const CrossSelection b = SelectCrossPairs(sample, {});
  ASSERT_EQ(a.chosen.size(), b.chosen.size());
  for (size_t i = 0; i < a.chosen.size(); ++i) {
    EXPECT_EQ(a.chosen[i].pair, b.chosen[i].pair);
    EXPECT_EQ(a.chosen[i].gain, b.chosen[i].gain);  // bit for bit
  }
  EXPECT_EQ(a.base_logloss, b.base_logloss);
}

TEST(CrossSelectionTest, TinyOrEmptySamplesChooseNothing) {
  CrossSample empty(4);
  EXPECT_TRUE(SelectCrossPairs(empty, {}).chosen.empty());
  CrossSample one(4);
  one.AddRow({1, 2, CrossSample::kMissing, 3}, 1);
  EXPECT_TRUE(SelectCrossPairs(one, {}).chosen.empty());
  // A strong interaction, but on fewer rows than min_rows: nothing.
  const CrossSample few = Synthetic(6, 20, 5000, {{1, 4}}, 1.5, 3);
  EXPECT_TRUE(SelectCrossPairs(few, {}).chosen.empty());
  CrossSelectionOptions options;
  options.min_rows = 1000;
  EXPECT_FALSE(SelectCrossPairs(few, options).chosen.empty());
}

TEST(CrossSelectionTest, SampleTakesEachFieldsFirstKey) {
  Batch batch;
  batch.labels = {1, 0};
  batch.keys = {uint64_t{5} << 32, uint64_t{6} << 32, uint64_t{7} << 32,
                ~uint64_t{0}};
  batch.values = {1, 1, 1, 1};
  batch.fields = {0, 0, 2, 1};
  batch.offsets = {0, 3, 4};
  CrossSample sample(3);
  sample.AddBatch(batch, 10);
  ASSERT_EQ(sample.rows(), 2u);
  EXPECT_EQ(sample.id(0, 0), 5u);
  EXPECT_EQ(sample.id(0, 1), CrossSample::kMissing);
  EXPECT_EQ(sample.id(0, 2), 7u);
  EXPECT_EQ(sample.id(1, 1), CrossSample::kMissing - 1);  // never kMissing
  EXPECT_EQ(sample.label(0), 1.0f);
  CrossSample capped(3);
  capped.AddBatch(batch, 1);
  EXPECT_EQ(capped.rows(), 1u);
}

// A Criteo file whose label depends on the pair (C1, C2) only.
std::string InteractingCriteo(size_t rows) {
  std::string text;
  for (size_t r = 0; r < rows; ++r) {
    const int a = static_cast<int>(Unit(1, r, 0) * 20);
    const int b = static_cast<int>(Unit(1, r, 1) * 20);
    const double z = Unit(2, a, b) < 0.5 ? -1.5 : 1.5;
    const int label = Unit(3, r, 0) < 1 / (1 + std::exp(-z)) ? 1 : 0;
    absl::StrAppend(&text, label, std::string(13, '\t'), "\t", "a", a, "\tb", b,
                    std::string(24, '\t'), "\n");
  }
  return text;
}

TEST(CrossSelectionTest, ForJobFillsThePairsFromTheTrainingFile) {
  pb::JobConfig job;
  job.mutable_model()->set_kind(pb::ModelConfig::KIND_MLP);
  job.mutable_data()->set_format(pb::DataConfig::FORMAT_CRITEO);
  job.mutable_data()->add_train(
      WriteTempFile("train", InteractingCriteo(20000)));
  job.mutable_model()->mutable_crosses()->set_auto_max_pairs(4);
  absl::StatusOr<CrossSelection> s = SelectCrossesForJob(&job);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(job.model().crosses().pairs_size(), 1);
  EXPECT_EQ(job.model().crosses().pairs(0).a(), 13);
  EXPECT_EQ(job.model().crosses().pairs(0).b(), 14);
  // Selected once: a second call leaves the listed pairs alone.
  ASSERT_TRUE(SelectCrossesForJob(&job).ok());
  EXPECT_EQ(job.model().crosses().pairs_size(), 1);
}

TEST(CrossSelectionTest, StopsWhenAsked) {
  const CrossSample sample = Synthetic(6, 20, 20000, {{1, 4}}, 1.0, 3);
  CrossSelectionOptions options;
  int asked = 0;
  options.stopped = [&asked] { return ++asked > 10; };
  const CrossSelection s = SelectCrossPairs(sample, options);
  EXPECT_TRUE(s.stopped);
  EXPECT_TRUE(s.chosen.empty());
  EXPECT_EQ(asked, 11);

  pb::JobConfig job;
  job.mutable_data()->set_format(pb::DataConfig::FORMAT_CRITEO);
  job.mutable_data()->add_train(
      WriteTempFile("train", InteractingCriteo(20000)));
  job.mutable_model()->mutable_crosses()->set_auto_max_pairs(4);
  absl::StatusOr<CrossSelection> r =
      SelectCrossesForJob(&job, [] { return true; });
  EXPECT_TRUE(absl::IsAborted(r.status())) << r.status();
  EXPECT_EQ(job.model().crosses().pairs_size(), 0);
}

TEST(CrossSelectionTest, ForJobOnLibsvmDoesNothing) {
  pb::JobConfig job;
  job.mutable_data()->add_train(WriteTempFile("train", "1 1:1\n"));
  job.mutable_model()->mutable_crosses()->set_auto_max_pairs(4);
  ASSERT_TRUE(SelectCrossesForJob(&job).ok());
  EXPECT_EQ(job.model().crosses().pairs_size(), 0);
}

TEST(CrossSelectionTest, ForJobOnAFileWithoutExamplesIsAnError) {
  pb::JobConfig job;
  job.mutable_data()->set_format(pb::DataConfig::FORMAT_CRITEO);
  job.mutable_data()->add_train(WriteTempFile("train", "\n"));
  job.mutable_model()->mutable_crosses()->set_auto_max_pairs(4);
  absl::StatusOr<CrossSelection> s = SelectCrossesForJob(&job);
  EXPECT_TRUE(absl::IsInvalidArgument(s.status())) << s.status();
  EXPECT_NE(s.status().message().find("no training examples"),
            std::string::npos);
}

}  // namespace
}  // namespace petrel
