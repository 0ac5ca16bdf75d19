#include "worker/train/divergence_check.h"

#include <limits>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace petrel {
namespace {

using ::testing::HasSubstr;

std::vector<ModelTable> Tables() {
  std::vector<ModelTable> tables(2);
  tables[0].id = 0;
  tables[1].id = 1;
  return tables;
}

pb::JobConfig FmJob() {
  pb::JobConfig job;
  job.mutable_model()->set_kind(pb::ModelConfig::KIND_FM);
  return job;
}

TEST(DivergenceCheckTest, FiniteRunPasses) {
  EXPECT_TRUE(
      CheckDivergence(FmJob(), Tables(), 12.5, {{0.1f, -3}, {1e18f}}, 3, 0)
          .ok());
}

TEST(DivergenceCheckTest, NonFiniteLossNamesTablesOptimizersAndStep) {
  for (double loss : {std::numeric_limits<double>::quiet_NaN(),
                      std::numeric_limits<double>::infinity()}) {
    absl::Status s =
        CheckDivergence(FmJob(), Tables(), loss, {{0.1f}, {0.2f}}, 41, 2);
    EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
    EXPECT_THAT(s.message(),
                HasSubstr("training diverged at step 41 (epoch 3)"));
    EXPECT_THAT(s.message(), HasSubstr("table 0 (optimizer FTRL), table 1 "
                                       "(optimizer FTRL)"));
  }
}

TEST(DivergenceCheckTest, UnsafeGradientNamesItsTable) {
  pb::JobConfig job = FmJob();
  job.add_tables()->set_id(0);
  pb::TableProto* factors = job.add_tables();
  factors->set_id(1);
  factors->set_dim(8);
  factors->mutable_optimizer()->set_kind(pb::OptimizerProto::KIND_SGD);
  for (float bad : {std::numeric_limits<float>::quiet_NaN(),
                    -std::numeric_limits<float>::infinity(), 5e19f}) {
    absl::Status s =
        CheckDivergence(job, Tables(), 1.0, {{0.1f}, {1, bad}}, 7, 0);
    EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
    EXPECT_THAT(s.message(), HasSubstr("step 7"));
    EXPECT_THAT(s.message(), HasSubstr("table 1 (optimizer SGD)"));
  }
}

}  // namespace
}  // namespace petrel
