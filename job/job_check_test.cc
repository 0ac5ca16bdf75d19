#include "job/job_check.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "job/model_layout.h"

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
  // 9e8 weights with Adam (weight, m and v: 3 floats each): about 10 GiB,
  // and a message of the weights in flight: 3.4 GiB more.
  EXPECT_GT(EstimateServerBytes(job), 13 * kGiB);
  EXPECT_LT(EstimateServerBytes(job), 14 * kGiB);
  absl::Status s = CheckJobConfig(job, 0, 8 * kGiB);
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_THAT(s.message(), HasSubstr("model.hidden"));
  EXPECT_THAT(s.message(), HasSubstr("physical memory of 8.0 GiB"));
  // Split over four servers it fits in 12 GiB on the servers (5.9 GiB
  // each), and every worker holds all the weights, their gradients and a
  // message of them (10.1 GiB).
  job.set_num_servers(4);
  EXPECT_TRUE(CheckJobConfig(job, 0, 12 * kGiB).ok());
  // The cluster's size (from flags) wins over the job's.
  EXPECT_FALSE(CheckJobConfig(job, 1, 12 * kGiB).ok());
  job.set_num_servers(0);
  EXPECT_TRUE(CheckJobConfig(job, 4, 12 * kGiB).ok());
  job.set_num_servers(4);
  // One copy of each key range (the default of 4 servers is 2): the
  // servers' share then fits, and the workers' does not.
  job.set_replicas(1);
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
  // Each process fits 20 GiB (6.7 GiB per server, 10.1 GiB per worker)...
  EXPECT_TRUE(CheckJobConfig(job, 2, 20 * kGiB).ok());
  // ...but not two of each together.
  absl::Status s = CheckOneMachineMemory(job, 2, 2, 20 * kGiB);
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_THAT(s.message(), HasSubstr("model.hidden: 2 server(s) and 2 "
                                     "worker(s) on this machine need about"));
  // One of each needs 23.5 GiB: on a 24 GiB machine the pair was killed
  // for memory once the worker's first pull was answered.
  EXPECT_FALSE(CheckOneMachineMemory(job, 1, 1, 20 * kGiB).ok());
  EXPECT_TRUE(CheckOneMachineMemory(job, 1, 1, 32 * kGiB).ok());
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

pb::JobConfig CappedLr(double table_cap_mib, double server_cap_mib) {
  pb::JobConfig job;
  pb::TableProto* t = job.add_tables();
  t->set_id(0);
  t->set_dim(1);
  t->set_memory_cap_mib(table_cap_mib);
  job.mutable_server()->set_memory_cap_mib(server_cap_mib);
  return job;
}

TEST(JobCheckTest, CappedSparseTablesCountAtTheirCaps) {
  constexpr int64_t kMiB = int64_t{1} << 20;
  // Uncapped sparse tables are not estimated; an admission sketch is.
  pb::JobConfig job = CappedLr(0, 0);
  EXPECT_EQ(EstimateServerBytes(job), 0);
  job.mutable_tables(0)->set_admit_after(2);
  EXPECT_EQ(EstimateServerBytes(job), 2 * kMiB);
  // A capped table counts its cap on every server, whatever their number.
  job = CappedLr(100, 0);
  EXPECT_EQ(EstimateServerBytes(job), 100 * kMiB);
  job.set_num_servers(4);
  EXPECT_EQ(EstimateServerBytes(job), 100 * kMiB);
  // The server's cap bounds it, uncapped tables included.
  EXPECT_EQ(EstimateServerBytes(CappedLr(100, 60)), 60 * kMiB);
  EXPECT_EQ(EstimateServerBytes(CappedLr(0, 60)), 60 * kMiB);
  EXPECT_EQ(EstimateServerBytes(CappedLr(40, 60)), 40 * kMiB);
}

TEST(JobCheckTest, RefusesCapsThatCannotFit) {
  // A 6 GiB cap on a 4 GiB machine; FTRL rows take 12 bytes of floats,
  // 16 of tracking and about 24 of index.
  absl::Status s = CheckJobConfig(CappedLr(6144, 0), 0, 4 * kGiB);
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_EQ(std::string(s.message()),
            "tables[0].memory_cap_mib: table 0 may hold 6.0 GiB on each of 1 "
            "server(s) (about 123893287 rows of 52 bytes), the tables 6.0 GiB "
            "in all, above the physical memory of 4.0 GiB");
  // More servers do not help: the cap is each server's.
  pb::JobConfig job = CappedLr(6144, 0);
  job.set_num_servers(3);
  EXPECT_FALSE(CheckJobConfig(job, 0, 4 * kGiB).ok());
  // Under a server cap of 2 GiB it fits: min(6 GiB, 2 GiB).
  EXPECT_TRUE(CheckJobConfig(CappedLr(6144, 2048), 0, 4 * kGiB).ok());
  // A server cap above the memory is refused, naming it.
  s = CheckJobConfig(CappedLr(0, 5120), 0, 4 * kGiB);
  EXPECT_EQ(std::string(s.message()),
            "server.memory_cap_mib: each of 1 server(s) may hold 5.0 GiB of "
            "tables (its cap), above the physical memory of 4.0 GiB");
  // Without any cap the sparse table is not estimated.
  EXPECT_TRUE(CheckJobConfig(CappedLr(0, 0), 0, 4 * kGiB).ok());
  // A bad server cap.
  EXPECT_EQ(std::string(CheckJobConfig(CappedLr(0, -1), 0, 0).message()),
            "server.memory_cap_mib: -1 is not a finite value in 0..10^12");
  // Two servers of 3 GiB on one 4 GiB machine.
  EXPECT_TRUE(CheckJobConfig(CappedLr(3072, 0), 2, 4 * kGiB).ok());
  s = CheckOneMachineMemory(CappedLr(3072, 0), 2, 1, 4 * kGiB);
  EXPECT_THAT(s.message(),
              HasSubstr("tables: 2 server(s) and 1 worker(s) on this machine "
                        "need about 6.0 GiB together"));
}

TEST(JobCheckTest, RefusesAServerCapBelowTheDenseTables) {
  pb::JobConfig job;
  job.mutable_model()->set_kind(pb::ModelConfig::KIND_MLP);
  job.mutable_model()->add_hidden(30000);
  job.mutable_model()->add_hidden(30000);
  job.mutable_server()->set_memory_cap_mib(1024);
  absl::Status s = CheckJobConfig(job, 0, 0);
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_EQ(std::string(s.message()),
            "server.memory_cap_mib: 1024.0 MiB is below the dense tables, "
            "which need about 10.1 GiB on each of 1 server(s) (rows and "
            "optimizer state, never evicted)");
  job.mutable_server()->set_memory_cap_mib(16384);
  EXPECT_TRUE(CheckJobConfig(job, 0, 0).ok());
  // The cap, and a message of the server's weights in flight (not table
  // memory, so not under the cap).
  absl::StatusOr<MlpLayout> layout = MlpLayoutFromJob(job);
  ASSERT_TRUE(layout.ok());
  EXPECT_EQ(EstimateServerBytes(job),
            (int64_t{16384} << 20) +
                static_cast<int64_t>(layout->padded_params() * sizeof(float)));
}

TEST(JobCheckTest, ReplicasAreCheckedAndEachCopyCountsOnTheServers) {
  pb::JobConfig job;
  job.mutable_model()->set_kind(pb::ModelConfig::KIND_MLP);
  job.mutable_model()->add_hidden(3000);
  job.set_num_servers(2);
  job.set_replicas(1);
  const double one = static_cast<double>(EstimateServerBytes(job));
  // A message of its own share's weights in flight, not of the copy's.
  absl::StatusOr<MlpLayout> layout = MlpLayoutFromJob(job);
  ASSERT_TRUE(layout.ok());
  const double message = static_cast<double>((layout->dense_rows + 1) / 2 *
                                             kMlpRowFloats * sizeof(float));
  job.set_replicas(2);
  EXPECT_TRUE(CheckJobConfig(job, 0, 0).ok());
  // Each server holds its share of the dense rows and a copy of the other's.
  EXPECT_NEAR(static_cast<double>(EstimateServerBytes(job)), 2 * one - message,
              2);
  // Not set: 2 copies with 2 servers or more, 1 with one server.
  job.set_replicas(0);
  EXPECT_NEAR(static_cast<double>(EstimateServerBytes(job)), 2 * one - message,
              2);
  job.set_replicas(3);
  EXPECT_EQ(std::string(CheckJobConfig(job, 0, 0).message()),
            "replicas: 3 is not in 0..2 (the servers)");
  job.set_replicas(-1);
  EXPECT_EQ(std::string(CheckJobConfig(job, 0, 0).message()),
            "replicas: -1 is not in 0..2 (the servers)");
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
