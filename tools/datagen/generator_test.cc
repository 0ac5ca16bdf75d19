#include "tools/datagen/generator.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

#include "worker/data/reader.h"

namespace petrel {
namespace datagen {
namespace {

std::string TempPath(absl::string_view name) {
  const ::testing::TestInfo* test =
      ::testing::UnitTest::GetInstance()->current_test_info();
  return absl::StrCat(::testing::TempDir(), test->test_suite_name(), ".",
                      test->name(), ".", getpid(), ".", name);
}

Generator Make(DataFormat format, uint64_t seed = 7,
               bool interactions = false) {
  DatagenOptions options;
  options.format = format;
  options.seed = seed;
  options.interactions = interactions;
  absl::StatusOr<Generator> generator = Generator::Create(options);
  EXPECT_TRUE(generator.ok()) << generator.status();
  return *std::move(generator);
}

std::string Text(const Generator& generator, uint64_t stream, int64_t count,
                 SplitStats* stats = nullptr,
                 std::vector<Example>* examples = nullptr) {
  std::string text;
  SplitStats local;
  generator.Generate(stream, count, &text, stats ? stats : &local, examples);
  return text;
}

TEST(GeneratorTest, OutputIsDeterministicBySeedAndStream) {
  for (DataFormat format : {DataFormat::kLibsvm, DataFormat::kCriteo}) {
    const Generator generator = Make(format, 7);
    const std::string a = Text(generator, 0, 1000);
    EXPECT_EQ(a, Text(Make(format, 7), 0, 1000));
    EXPECT_NE(a, Text(Make(format, 8), 0, 1000));
    EXPECT_NE(a, Text(generator, 1, 1000));
    // A shorter run is a prefix of a longer one.
    const std::string prefix = Text(generator, 0, 300);
    EXPECT_EQ(prefix, a.substr(0, prefix.size()));
  }
}

TEST(GeneratorTest, WriteFileWritesWhatGenerateReturns) {
  const Generator generator = Make(DataFormat::kCriteo);
  const std::string path = TempPath("out.tsv");
  absl::StatusOr<SplitStats> stats = generator.WriteFile(path, 1, 5000);
  ASSERT_TRUE(stats.ok()) << stats.status();
  std::stringstream written;
  written << std::ifstream(path).rdbuf();
  SplitStats expected;
  EXPECT_EQ(written.str(), Text(generator, 1, 5000, &expected));
  EXPECT_EQ(stats->examples, 5000);
  EXPECT_EQ(stats->positives, expected.positives);
  EXPECT_FALSE(generator.WriteFile("/nonexistent-dir/x", 0, 1).ok());
  std::remove(path.c_str());
}

// Reads `text` back with the reader of `format` and checks that it returns
// exactly the generator's examples, whose ground truth it reproduces.
void ExpectReaderSeesExamples(DataFormat format) {
  const Generator generator = Make(format);
  std::vector<Example> examples;
  const std::string path = TempPath("data");
  std::ofstream(path) << Text(generator, 0, 3000, nullptr, &examples);
  ReaderOptions options;
  options.format = format;
  options.files = {path};
  absl::StatusOr<std::unique_ptr<Reader>> reader = OpenReader(options);
  ASSERT_TRUE(reader.ok()) << reader.status();
  Batch batch;
  size_t next = 0;
  while ((*reader)->Next(512, &batch).value_or(false)) {
    for (size_t i = 0; i < batch.size(); ++i, ++next) {
      ASSERT_LT(next, examples.size());
      const Example& want = examples[next];
      const auto first = batch.offsets[i], last = batch.offsets[i + 1];
      const std::vector<uint64_t> keys(batch.keys.begin() + first,
                                       batch.keys.begin() + last);
      const std::vector<float> values(batch.values.begin() + first,
                                      batch.values.begin() + last);
      ASSERT_EQ(batch.labels[i], want.label) << "example " << next;
      ASSERT_EQ(keys, want.keys) << "example " << next;
      ASSERT_EQ(values, want.values) << "example " << next;
      const double logit = std::log(want.probability / (1 - want.probability));
      ASSERT_NEAR(generator.GroundTruthLogit(keys, values), logit, 1e-6);
    }
  }
  EXPECT_EQ(next, examples.size());
  EXPECT_EQ((*reader)->malformed_lines(), 0);
  std::remove(path.c_str());
}

TEST(GeneratorTest, CriteoOutputReadsBackAsTheGroundTruthFeatures) {
  ExpectReaderSeesExamples(DataFormat::kCriteo);
}

TEST(GeneratorTest, LibsvmOutputReadsBackAsTheGroundTruthFeatures) {
  ExpectReaderSeesExamples(DataFormat::kLibsvm);
}

TEST(GeneratorTest, FormatsShareLabelsAndProbabilities) {
  std::vector<Example> libsvm, criteo;
  Text(Make(DataFormat::kLibsvm), 0, 1000, nullptr, &libsvm);
  Text(Make(DataFormat::kCriteo), 0, 1000, nullptr, &criteo);
  ASSERT_EQ(libsvm.size(), criteo.size());
  for (size_t i = 0; i < libsvm.size(); ++i) {
    EXPECT_EQ(libsvm[i].label, criteo[i].label);
    EXPECT_EQ(libsvm[i].probability, criteo[i].probability);
  }
}

TEST(GeneratorTest, LabelsFollowTheTrueProbabilities) {
  SplitStats stats;
  std::vector<Example> examples;
  Text(Make(DataFormat::kLibsvm), 0, 20000, &stats, &examples);
  double mean_p = 0, logloss = 0;
  for (const Example& e : examples) {
    mean_p += e.probability;
    logloss -= e.label ? std::log(e.probability) : std::log1p(-e.probability);
  }
  mean_p /= examples.size();
  logloss /= examples.size();
  EXPECT_NEAR(stats.positive_rate(), 0.25, 0.02);
  EXPECT_NEAR(mean_p, 0.25, 0.02);
  EXPECT_NEAR(stats.positive_rate(), mean_p, 0.015);
  // The true model's log loss on the labels estimates the mean entropy.
  EXPECT_NEAR(logloss, stats.bayes_logloss(), 0.015);
  // Learnable: well below the best constant predictor, but noisy.
  EXPECT_LT(stats.bayes_logloss(), stats.constant_logloss() - 0.05);
  EXPECT_GT(stats.bayes_logloss(), 0.2);
}

TEST(GeneratorTest, InteractionsChangeTheGroundTruth) {
  SplitStats plain, with;
  std::vector<Example> a, b;
  Text(Make(DataFormat::kCriteo, 7, false), 0, 2000, &plain, &a);
  const std::string text =
      Text(Make(DataFormat::kCriteo, 7, true), 0, 2000, &with, &b);
  EXPECT_EQ(text, Text(Make(DataFormat::kCriteo, 7, true), 0, 2000));
  int differ = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].keys, b[i].keys);
    differ += a[i].probability != b[i].probability;
  }
  EXPECT_GT(differ, 1000);
  EXPECT_LT(with.bayes_logloss(), with.constant_logloss());
}

// Probabilities and text of 2000 Criteo examples of seed 7 with `options`.
std::vector<Example> Examples(DatagenOptions options, std::string* text,
                              SplitStats* stats) {
  options.format = DataFormat::kCriteo;
  options.seed = 7;
  absl::StatusOr<Generator> generator = Generator::Create(options);
  EXPECT_TRUE(generator.ok()) << generator.status();
  std::vector<Example> examples;
  *text = Text(*generator, 0, 2000, stats, &examples);
  return examples;
}

TEST(GeneratorTest, InteractionScaleAndRankChangeOnlyTheInteractions) {
  DatagenOptions options;
  std::string plain_text, text;
  SplitStats plain_stats, stats;
  Examples(options, &plain_text, &plain_stats);
  options.interaction_scale = 3;
  options.interaction_rank = 4;
  Examples(options, &text, &stats);
  EXPECT_EQ(text, plain_text) << "no interactions: the options do nothing";
  options.interactions = true;
  options.interaction_scale = 1;
  options.interaction_rank = 0;
  const std::vector<Example> base = Examples(options, &text, &stats);
  EXPECT_EQ(text, Text(Make(DataFormat::kCriteo, 7, true), 0, 2000));
  double previous_bayes = stats.bayes_logloss();
  for (int rank : {0, 4}) {
    options.interaction_rank = rank;
    for (double scale : {1.0, 3.0}) {
      if (rank == 0 && scale == 1.0) continue;
      options.interaction_scale = scale;
      const std::vector<Example> other = Examples(options, &text, &stats);
      int differ = 0;
      for (size_t i = 0; i < base.size(); ++i) {
        EXPECT_EQ(base[i].keys, other[i].keys);
        differ += base[i].probability != other[i].probability;
      }
      EXPECT_GT(differ, 1000) << "rank " << rank << " scale " << scale;
      if (scale == 3.0) {
        // Stronger interactions make the labels more predictable.
        EXPECT_LT(stats.bayes_logloss(), previous_bayes - 0.02)
            << "rank " << rank;
      }
    }
  }
}

TEST(GeneratorTest, CreateRejectsBadOptions) {
  DatagenOptions options;
  options.index_bits = 70;
  EXPECT_EQ(Generator::Create(options).status().code(),
            absl::StatusCode::kInvalidArgument);
  options = DatagenOptions();
  options.positive_rate = 1;
  EXPECT_EQ(Generator::Create(options).status().code(),
            absl::StatusCode::kInvalidArgument);
  options = DatagenOptions();
  options.weight_stddev = -1;
  EXPECT_FALSE(Generator::Create(options).ok());
  options = DatagenOptions();
  options.zipf_exponent = 0;
  EXPECT_FALSE(Generator::Create(options).ok());
  options = DatagenOptions();
  options.interaction_scale = 0;
  EXPECT_FALSE(Generator::Create(options).ok());
  options = DatagenOptions();
  options.interaction_rank = 65;
  EXPECT_FALSE(Generator::Create(options).ok());
  for (int max_fields : {0, 40}) {
    options = DatagenOptions();
    options.max_fields = max_fields;
    EXPECT_EQ(Generator::Create(options).status().code(),
              absl::StatusCode::kInvalidArgument)
        << max_fields;
  }
}

TEST(GeneratorTest, MaxFieldsKeepsARandomSubsetOfFields) {
  DatagenOptions options;
  options.format = DataFormat::kCriteo;  // one key per present field
  options.max_fields = 15;
  absl::StatusOr<Generator> generator = Generator::Create(options);
  ASSERT_TRUE(generator.ok()) << generator.status();
  std::vector<Example> examples;
  SplitStats stats;
  Text(*generator, 0, 5000, &stats, &examples);
  double sum = 0;
  for (const Example& e : examples) {
    ASSERT_LE(e.keys.size(), 15u);
    sum += static_cast<double>(e.keys.size());
    // The ground truth counts only the fields written.
    const double logit = std::log(e.probability / (1 - e.probability));
    ASSERT_NEAR(generator->GroundTruthLogit(e.keys, e.values), logit, 1e-6);
  }
  // Most examples have more than 15 fields present, so nearly all keep 15.
  EXPECT_GT(sum / static_cast<double>(examples.size()), 14.5);
  // Still learnable, and calibrated to the asked positive rate.
  EXPECT_NEAR(stats.positive_rate(), 0.25, 0.03);
  EXPECT_LT(stats.bayes_logloss(), stats.constant_logloss() - 0.02);
  // The same options without the limit keep every present field.
  options.max_fields = 39;
  std::vector<Example> all;
  Text(*Generator::Create(options), 0, 200, nullptr, &all);
  size_t more = 0;
  for (const Example& e : all) more += e.keys.size() > 15 ? 1 : 0;
  EXPECT_GT(more, all.size() / 2);
}

}  // namespace
}  // namespace datagen
}  // namespace petrel
