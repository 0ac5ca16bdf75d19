#include "worker/model/eval_metrics.h"

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace petrel {
namespace {

TEST(LogLossTest, MatchesHandComputedValue) {
  const std::vector<float> labels = {1, 0};
  const std::vector<float> probs = {0.8f, 0.4f};
  // (-ln 0.8 - ln 0.6) / 2
  EXPECT_NEAR(LogLoss(labels, probs), (0.2231435513 + 0.5108256238) / 2, 1e-7);
  EXPECT_NEAR(LogLossSum(labels, probs), 0.2231435513 + 0.5108256238, 1e-7);
}

TEST(LogLossTest, ClampsCertainMistakes) {
  const std::vector<float> labels = {1, 0};
  const std::vector<float> probs = {0.0f, 1.0f};
  // Both clamp to about 1e-15 (1 - 1e-15 is not exact in a double).
  EXPECT_NEAR(LogLoss(labels, probs), -std::log(1e-15), 1e-3);
  EXPECT_NEAR(LogLoss({1.0f}, {1.0f}), 0.0, 1e-12);
}

TEST(LogLossTest, EmptyIsNaN) { EXPECT_TRUE(std::isnan(LogLoss({}, {}))); }

TEST(AucTest, MatchesHandComputedValues) {
  EXPECT_DOUBLE_EQ(Auc({0, 0, 1, 1}, {0.1f, 0.4f, 0.35f, 0.8f}), 0.75);
  EXPECT_DOUBLE_EQ(Auc({0, 1}, {0.5f, 0.5f}), 0.5);
  // Positives 0.2, 0.7, 0.5 against negatives 0.2, 0.5: pairs score
  // 0.5 + 0 + 1 + 1 + 1 + 0.5 = 4 of 6.
  EXPECT_DOUBLE_EQ(Auc({0, 1, 0, 1, 1}, {0.2f, 0.2f, 0.5f, 0.7f, 0.5f}),
                   4.0 / 6);
  EXPECT_DOUBLE_EQ(Auc({0, 0, 1}, {1, 2, 3}), 1.0);
  EXPECT_DOUBLE_EQ(Auc({1, 1, 0}, {1, 2, 3}), 0.0);
}

TEST(AucTest, SingleClassIsNaN) {
  EXPECT_TRUE(std::isnan(Auc({1, 1}, {0.1f, 0.2f})));
  EXPECT_TRUE(std::isnan(Auc({}, {})));
}

TEST(AucTest, MatchesPairCountingWithTies) {
  std::mt19937 rng(7);
  std::vector<float> labels(300), scores(300);
  for (size_t i = 0; i < labels.size(); ++i) {
    labels[i] = rng() % 3 == 0;
    scores[i] = static_cast<float>(rng() % 20);  // many ties
  }
  double wins = 0, pairs = 0;
  for (size_t i = 0; i < labels.size(); ++i) {
    for (size_t j = 0; j < labels.size(); ++j) {
      if (labels[i] != 1 || labels[j] != 0) continue;
      pairs += 1;
      wins += scores[i] > scores[j] ? 1 : scores[i] == scores[j] ? 0.5 : 0;
    }
  }
  EXPECT_NEAR(Auc(labels, scores), wins / pairs, 1e-12);
}

// Every metric ends on any input: NaN and infinite scores, probabilities
// and labels (a run that diverged hands them over).
TEST(AucTest, NaNScoreGivesNaNAndEnds) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(std::isnan(Auc({1, 0, 1}, {nan, 0.2f, 0.3f})));
  EXPECT_TRUE(std::isnan(Auc({1, 0}, {nan, nan})));
  std::vector<float> labels(1000), scores(1000, nan);
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = i % 2;
  EXPECT_TRUE(std::isnan(Auc(labels, scores)));
}

TEST(AucTest, InfiniteScoresRankAndTie) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_DOUBLE_EQ(Auc({1, 0, 0}, {inf, -inf, 0}), 1.0);
  // Positive and negative tied at +inf count one half.
  EXPECT_DOUBLE_EQ(Auc({1, 0}, {inf, inf}), 0.5);
  EXPECT_DOUBLE_EQ(Auc({0, 1, 0, 1}, {-inf, -inf, inf, inf}), 0.5);
}

TEST(AucTest, NonFiniteLabelsEnd) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  // A NaN label is not > 0.5: it counts as a negative.
  EXPECT_DOUBLE_EQ(Auc({1, nan}, {0.9f, 0.1f}), 1.0);
  EXPECT_DOUBLE_EQ(Auc({inf, 0}, {0.9f, 0.1f}), 1.0);
}

TEST(LogLossTest, NonFiniteInputsEnd) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(std::isnan(LogLoss({1, 0}, {nan, 0.5f})));
  // Infinite probabilities clamp like any other out of [0, 1].
  EXPECT_TRUE(std::isfinite(LogLoss({1, 0}, {inf, -inf})));
  EXPECT_TRUE(std::isfinite(LogLoss({nan, inf}, {0.5f, 0.5f})));
  RunningLogLoss running(10);
  running.Add({1, 0}, {nan, 0.5f});
  EXPECT_TRUE(std::isnan(running.total_logloss()));
}

TEST(RunningLogLossTest, KeepsWholeBatchesCoveringTheWindow) {
  RunningLogLoss running(15);
  EXPECT_TRUE(std::isnan(running.window_logloss()));
  running.AddSum(10, 10);
  running.AddSum(40, 10);
  // Dropping the first batch would leave 10 < 15 examples.
  EXPECT_EQ(running.window_examples(), 20);
  EXPECT_DOUBLE_EQ(running.window_logloss(), 2.5);
  running.AddSum(0, 10);
  EXPECT_EQ(running.window_examples(), 20);
  EXPECT_DOUBLE_EQ(running.window_logloss(), 2.0);
  EXPECT_EQ(running.total_examples(), 30);
  EXPECT_DOUBLE_EQ(running.total_logloss(), 50.0 / 30);
  running.Reset();
  EXPECT_EQ(running.total_examples(), 0);
  EXPECT_TRUE(std::isnan(running.total_logloss()));
}

TEST(RunningLogLossTest, AddComputesBatchLogLoss) {
  RunningLogLoss running(100);
  running.Add({1, 0}, {0.8f, 0.4f});
  EXPECT_NEAR(running.window_logloss(), (0.2231435513 + 0.5108256238) / 2,
              1e-7);
  running.Add({}, {});
  EXPECT_EQ(running.window_examples(), 2);
}

}  // namespace
}  // namespace petrel
