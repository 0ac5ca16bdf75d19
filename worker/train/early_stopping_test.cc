#include "worker/train/early_stopping.h"

#include <cmath>
#include <limits>

#include "gtest/gtest.h"

namespace petrel {
namespace {

pb::EarlyStoppingConfig Config(pb::EarlyStoppingConfig::Metric metric,
                               int patience, float min_delta = 0) {
  pb::EarlyStoppingConfig c;
  c.set_metric(metric);
  c.set_patience(patience);
  c.set_min_delta(min_delta);
  return c;
}

TEST(EarlyStoppingTest, LoglossStopsAfterPatienceWithoutImprovement) {
  EarlyStopping rule(Config(pb::EarlyStoppingConfig::METRIC_LOGLOSS, 2));
  EXPECT_TRUE(rule.Add(0.6, 0.7, 1, 10).improved);
  EXPECT_TRUE(rule.Add(0.5, 0.7, 1, 20).improved);
  EarlyStopping::Verdict v = rule.Add(0.55, 0.8, 2, 30);
  EXPECT_FALSE(v.improved);
  EXPECT_FALSE(v.stop);
  v = rule.Add(0.51, 0.9, 2, 40);
  EXPECT_FALSE(v.improved);
  EXPECT_TRUE(v.stop);
  EXPECT_EQ(rule.best().value, 0.5);
  EXPECT_EQ(rule.best().epoch, 1);
  EXPECT_EQ(rule.best().batch, 20);
}

TEST(EarlyStoppingTest, AnImprovementResetsThePatience) {
  EarlyStopping rule(Config(pb::EarlyStoppingConfig::METRIC_LOGLOSS, 2));
  rule.Add(0.6, 0, 1, 1);
  EXPECT_FALSE(rule.Add(0.7, 0, 1, 2).stop);
  EXPECT_TRUE(rule.Add(0.4, 0, 1, 3).improved);
  EXPECT_FALSE(rule.Add(0.7, 0, 1, 4).stop);
  EXPECT_TRUE(rule.Add(0.7, 0, 1, 5).stop);
}

TEST(EarlyStoppingTest, AucMustRise) {
  EarlyStopping rule(Config(pb::EarlyStoppingConfig::METRIC_AUC, 1));
  EXPECT_TRUE(rule.Add(0.5, 0.70, 1, 1).improved);
  // The logloss got better, but AUC is the metric.
  EarlyStopping::Verdict v = rule.Add(0.4, 0.69, 1, 2);
  EXPECT_FALSE(v.improved);
  EXPECT_TRUE(v.stop);
  EXPECT_EQ(rule.metric_name(), "auc");
}

TEST(EarlyStoppingTest, ChangesWithinMinDeltaAreNoImprovement) {
  EarlyStopping rule(
      Config(pb::EarlyStoppingConfig::METRIC_LOGLOSS, 1, /*min_delta=*/0.01));
  rule.Add(0.5, 0, 1, 1);
  EarlyStopping::Verdict v = rule.Add(0.495, 0, 1, 2);
  EXPECT_FALSE(v.improved);
  EXPECT_TRUE(v.stop);
}

TEST(EarlyStoppingTest, NanNeverImproves) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EarlyStopping rule(Config(pb::EarlyStoppingConfig::METRIC_LOGLOSS, 2));
  EXPECT_FALSE(rule.Add(nan, nan, 1, 1).improved);
  EXPECT_TRUE(rule.Add(0.5, 0, 1, 2).improved);
  EXPECT_FALSE(rule.Add(nan, nan, 1, 3).improved);
  EXPECT_TRUE(rule.Add(nan, nan, 1, 4).stop);
  EXPECT_EQ(rule.best().batch, 2);
}

TEST(EarlyStoppingTest, WithoutAMetricItNeverStops) {
  EarlyStopping rule(Config(pb::EarlyStoppingConfig::METRIC_NONE, 1));
  rule.Add(0.5, 0, 1, 1);
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(rule.Add(0.9, 0, 1, 2 + i).stop);
  EXPECT_FALSE(rule.enabled());
}

TEST(EarlyStoppingTest, ResolveAppliesTheDefaultPatienceAndChecks) {
  pb::JobConfig job;
  job.mutable_train()->mutable_early_stopping()->set_metric(
      pb::EarlyStoppingConfig::METRIC_LOGLOSS);
  absl::Status s = ResolveEarlyStopping(&job);
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_NE(s.message().find("validation"), std::string::npos) << s;
  job.mutable_data()->set_validation_fraction(0.1f);
  EXPECT_TRUE(ResolveEarlyStopping(&job).ok());
  EXPECT_EQ(job.train().early_stopping().patience(), 3);
}

}  // namespace
}  // namespace petrel
