#include "job/job_check.h"

#include <cmath>
#include <limits>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace petrel {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kGiB = int64_t{1} << 30;

TEST(JobCheckTest, RefusesNegativeClusterSizes) {
  pb::JobConfig job;
  job.set_num_servers(-1);
  absl::Status s = CheckJobConfig(job, 0, 0);
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_THAT(s.message(), HasSubstr("num_servers: -1"));
  job.set_num_servers(0);
  job.set_num_workers(-3);
  EXPECT_THAT(CheckJobConfig(job, 0, 0).message(),
              HasSubstr("num_workers: -3"));
}

TEST(JobCheckTest, RefusesBadMaxAbsValueAndLimit) {
  pb::JobConfig job;
  job.mutable_data()->set_max_abs_value(-1);
  EXPECT_THAT(CheckJobConfig(job, 0, 0).message(),
              HasSubstr("data.max_abs_value"));
  job.mutable_data()->set_max_abs_value(std::numeric_limits<float>::infinity());
  EXPECT_THAT(CheckJobConfig(job, 0, 0).message(),
              HasSubstr("data.max_abs_value"));
  job.mutable_data()->set_max_abs_value(0);
  job.set_memory_limit_mib(-5);
  EXPECT_THAT(CheckJobConfig(job, 0, 0).message(),
              HasSubstr("memory_limit_mib"));
}

TEST(JobCheckTest, RefusesAnMlpThatCannotFit) {
  pb::JobConfig job;
  job.mutable_model()->set_kind(pb::ModelConfig::KIND_MLP);
  job.mutable_model()->add_hidden(30000);
  job.mutable_model()->add_hidden(30000);
  // 9e8 weights with Adam (weight, m and v: 3 floats each): about 10 GiB.
  EXPECT_GT(EstimateServerBytes(job), 10 * kGiB);
  EXPECT_LT(EstimateServerBytes(job), 11 * kGiB);
  absl::Status s = CheckJobConfig(job, 0, 8 * kGiB);
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_THAT(s.message(), HasSubstr("model.hidden"));
  EXPECT_THAT(s.message(), HasSubstr("physical memory of 8.0 GiB"));
  // Split over four servers it fits in 8 GiB on the servers, but every
  // worker still holds all the weights and gradients (6.7 GiB).
  job.set_num_servers(4);
  EXPECT_TRUE(CheckJobConfig(job, 0, 8 * kGiB).ok());
  // The cluster's size (from flags) wins over the job's.
  EXPECT_FALSE(CheckJobConfig(job, 1, 8 * kGiB).ok());
  job.set_num_servers(0);
  EXPECT_TRUE(CheckJobConfig(job, 4, 8 * kGiB).ok());
  job.set_num_servers(4);
  job.set_memory_limit_mib(4096);
  s = CheckJobConfig(job, 0, 8 * kGiB);
  EXPECT_THAT(s.message(), HasSubstr("on each worker"));
  EXPECT_THAT(s.message(), HasSubstr("memory_limit_mib of 4.0 GiB"));
}

TEST(JobCheckTest, OneMachineMustHoldEveryProcess) {
  pb::JobConfig job;
  job.mutable_model()->set_kind(pb::ModelConfig::KIND_MLP);
  job.mutable_model()->add_hidden(30000);
  job.mutable_model()->add_hidden(30000);
  job.set_num_servers(2);
  // Each process fits 20 GiB (5 GiB per server, 7 GiB per worker)...
  EXPECT_TRUE(CheckJobConfig(job, 2, 20 * kGiB).ok());
  // ...but not two of each together.
  absl::Status s = CheckOneMachineMemory(job, 2, 2, 20 * kGiB);
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_THAT(s.message(), HasSubstr("model.hidden: 2 server(s) and 2 "
                                     "worker(s) on this machine need about"));
  EXPECT_TRUE(CheckOneMachineMemory(job, 1, 1, 20 * kGiB).ok());
  EXPECT_TRUE(CheckOneMachineMemory(job, 2, 2, 0).ok());
}

TEST(JobCheckTest, AcceptsTheDefaultsAndIgnoresSparseTables) {
  pb::JobConfig job;
  EXPECT_EQ(EstimateServerBytes(job), 0);
  EXPECT_TRUE(CheckJobConfig(job, 0, kGiB).ok());
  job.mutable_model()->set_kind(pb::ModelConfig::KIND_MLP);
  EXPECT_TRUE(CheckJobConfig(job, 0, kGiB).ok());
  EXPECT_TRUE(CheckJobConfig(job, 0, PhysicalMemoryBytes()).ok());
}

TEST(JobCheckTest, DenseTableEstimateDoesNotOverflow) {
  pb::JobConfig job;
  pb::TableProto* t = job.add_tables();
  t->set_dense(true);
  t->set_dim(65536);
  t->set_num_keys(uint64_t{1} << 32);
  EXPECT_GT(EstimateServerBytes(job), 0);
  EXPECT_THAT(CheckJobConfig(job, 0, kGiB).message(), HasSubstr("tables"));
}

TEST(JobCheckTest, FindUnsafeValue) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(FindUnsafeValue({}, 1), -1);
  EXPECT_EQ(FindUnsafeValue(std::vector<float>{1, -2, 3}, 3), -1);
  EXPECT_EQ(FindUnsafeValue(std::vector<float>{1, -4, 3}, 3), 1);
  EXPECT_EQ(FindUnsafeValue(std::vector<float>{0, 0, nan}, 3), 2);
  EXPECT_EQ(FindUnsafeValue(std::vector<float>{-inf}, kMaxGradientMagnitude),
            0);
  EXPECT_EQ(FindUnsafeValue(std::vector<float>{5e19f}, kMaxGradientMagnitude),
            0);
  // Its square is still a finite float.
  const float edge = kMaxGradientMagnitude;
  EXPECT_TRUE(std::isfinite(edge * edge));
}

TEST(JobCheckTest, DescribeTableNamesTheOptimizer) {
  pb::JobConfig job;
  EXPECT_EQ(DescribeTable(job, 0), "table 0 (optimizer FTRL)");
  EXPECT_EQ(DescribeTable(job, 7), "table 7");
  job.mutable_model()->set_kind(pb::ModelConfig::KIND_MLP);
  EXPECT_EQ(DescribeTable(job, 1), "table 1 (optimizer Adagrad)");
  EXPECT_EQ(DescribeTable(job, 2), "table 2 (optimizer Adam)");
}

TEST(JobCheckTest, RefusesValidationAndEarlyStoppingThatCannotWork) {
  pb::JobConfig job;
  EXPECT_TRUE(CheckValidationConfig(job).ok());
  job.mutable_data()->set_validation_fraction(1.5f);
  EXPECT_THAT(CheckJobConfig(job, 0, 0).message(),
              HasSubstr("data.validation_fraction = 1.5"));
  job.mutable_data()->set_validation_fraction(0.25f);
  job.mutable_data()->add_validation("valid.txt");
  EXPECT_THAT(CheckValidationConfig(job).message(), HasSubstr("both set"));
  job.mutable_data()->clear_validation();
  pb::EarlyStoppingConfig* es = job.mutable_train()->mutable_early_stopping();
  es->set_metric(pb::EarlyStoppingConfig::METRIC_AUC);
  EXPECT_TRUE(CheckValidationConfig(job).ok());
  es->set_patience(-1);
  EXPECT_THAT(CheckValidationConfig(job).message(), HasSubstr("patience"));
  es->set_patience(2);
  es->set_min_delta(-0.5f);
  EXPECT_THAT(CheckValidationConfig(job).message(), HasSubstr("min_delta"));
  es->set_min_delta(0);
  job.mutable_data()->set_validation_fraction(0);
  EXPECT_THAT(CheckJobConfig(job, 0, 0).message(),
              HasSubstr("needs validation data"));
}

}  // namespace
}  // namespace petrel
