#include "job/crosses_config.h"

#include <string>

#include "gtest/gtest.h"

#include "job/model_layout.h"

namespace petrel {
namespace {

pb::JobConfig CriteoMlp() {
  pb::JobConfig job;
  job.mutable_model()->set_kind(pb::ModelConfig::KIND_MLP);
  job.mutable_data()->set_format(pb::DataConfig::FORMAT_CRITEO);
  return job;
}

void AddPair(pb::JobConfig* job, int a, int b) {
  pb::CrossesConfig::Pair* p =
      job->mutable_model()->mutable_crosses()->add_pairs();
  p->set_a(a);
  p->set_b(b);
}

std::string Error(const pb::JobConfig& job) {
  return std::string(CheckCrossesConfig(job).message());
}

TEST(CrossesConfigTest, NoneIsFineOnAnyFormat) {
  pb::JobConfig job;
  EXPECT_TRUE(CheckCrossesConfig(job).ok());
  EXPECT_EQ(CrossSlots(job.model()), 0);
  EXPECT_FALSE(SelectsCrosses(job.model()));
}

TEST(CrossesConfigTest, DefaultsAndSlots) {
  pb::JobConfig job = CriteoMlp();
  job.mutable_model()->mutable_crosses()->set_auto_max_pairs(16);
  EXPECT_TRUE(CheckCrossesConfig(job).ok());
  EXPECT_TRUE(SelectsCrosses(job.model()));
  EXPECT_EQ(CrossSlots(job.model()), 16);
  EXPECT_EQ(CrossSampleRows(job.model().crosses()), 200000);
  EXPECT_DOUBLE_EQ(CrossMinGain(job.model().crosses()), 3e-4);
  EXPECT_DOUBLE_EQ(CrossL2(job.model().crosses()), 10.0);
  // Wide only by default; with embed the MLP gives each slot a field.
  EXPECT_EQ(MlpLayoutFromJob(job)->num_fields, 39);
  EXPECT_EQ(EmbeddedCrossSlots(job.model()), 0);
  job.mutable_model()->mutable_crosses()->set_embed(true);
  absl::StatusOr<MlpLayout> layout = MlpLayoutFromJob(job);
  ASSERT_TRUE(layout.ok());
  EXPECT_EQ(layout->num_fields, 39 + 16);
  EXPECT_EQ(EmbeddedCrossSlots(job.model()), 16);
  // Filled by a selection: the slots (and so the layout) stay the same.
  AddPair(&job, 1, 20);
  EXPECT_FALSE(SelectsCrosses(job.model()));
  EXPECT_EQ(CrossSlots(job.model()), 16);
  EXPECT_EQ(CrossPairs(job.model()), (std::vector<CrossPair>{{1, 20}}));
}

TEST(CrossesConfigTest, RefusesBadSettingsNamingTheField) {
  pb::JobConfig libsvm;
  libsvm.mutable_model()->mutable_crosses()->set_auto_max_pairs(4);
  EXPECT_TRUE(CheckCrossesConfig(libsvm).ok());  // logged, not applied
  AddPair(&libsvm, 1, 2);
  EXPECT_NE(Error(libsvm).find("FORMAT_CRITEO"), std::string::npos);

  pb::JobConfig job = CriteoMlp();
  AddPair(&job, 3, 3);
  EXPECT_NE(Error(job).find("model.crosses.pairs: {a: 3 b: 3}"),
            std::string::npos);
  job = CriteoMlp();
  AddPair(&job, 0, 39);
  EXPECT_NE(Error(job).find("0..38"), std::string::npos);
  job = CriteoMlp();
  AddPair(&job, 4, 7);
  AddPair(&job, 7, 4);
  EXPECT_NE(Error(job).find("listed twice"), std::string::npos);

  job = CriteoMlp();
  job.mutable_model()->mutable_crosses()->set_auto_max_pairs(65);
  EXPECT_NE(Error(job).find("model.crosses.auto_max_pairs: 65"),
            std::string::npos);
  job = CriteoMlp();
  job.mutable_model()->mutable_crosses()->set_auto_max_pairs(1);
  AddPair(&job, 1, 2);
  AddPair(&job, 1, 3);
  EXPECT_NE(Error(job).find("more than auto_max_pairs"), std::string::npos);
  job = CriteoMlp();
  job.mutable_model()->mutable_crosses()->set_auto_max_pairs(4);
  job.mutable_model()->mutable_crosses()->set_auto_sample_rows(-1);
  EXPECT_NE(Error(job).find("auto_sample_rows"), std::string::npos);
  job.mutable_model()->mutable_crosses()->set_auto_sample_rows(0);
  job.mutable_model()->mutable_crosses()->set_auto_min_gain(-1);
  EXPECT_NE(Error(job).find("auto_min_gain"), std::string::npos);
  job.mutable_model()->mutable_crosses()->set_auto_min_gain(0);
  job.mutable_model()->mutable_crosses()->set_auto_l2(NAN);
  EXPECT_NE(Error(job).find("auto_l2"), std::string::npos);
}

}  // namespace
}  // namespace petrel
