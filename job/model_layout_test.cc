#include "job/model_layout.h"

#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

namespace petrel {
namespace {

pb::JobConfig Job(const char* text) {
  pb::JobConfig job;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &job));
  return job;
}

TEST(MlpLayoutTest, CriteoDefaultsLayOutLayersBackToBack) {
  absl::StatusOr<MlpLayout> l = MlpLayoutFromJob(
      Job("model { kind: KIND_MLP } data { format: FORMAT_CRITEO }"));
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->embedding_dim, 16);
  EXPECT_EQ(l->input_dim, 39u * 16 + 13);
  ASSERT_EQ(l->layers.size(), 3u);
  EXPECT_EQ(l->layers[0].in, 637u);
  EXPECT_EQ(l->layers[0].out, 256u);
  EXPECT_EQ(l->layers[0].w_offset, 0u);
  EXPECT_EQ(l->layers[0].b_offset, 637u * 256);
  EXPECT_EQ(l->layers[1].w_offset, 637u * 256 + 256);
  EXPECT_EQ(l->layers[1].in, 256u);
  EXPECT_EQ(l->layers[1].out, 128u);
  EXPECT_TRUE(l->layers[1].relu);
  EXPECT_EQ(l->layers[2].out, 1u);
  EXPECT_FALSE(l->layers[2].relu);
  const size_t params = 637 * 256 + 256 + 256 * 128 + 128 + 128 + 1;
  EXPECT_EQ(l->num_params, params);
  EXPECT_EQ(l->dense_rows, (params + 63) / 64);
  EXPECT_GE(l->padded_params(), params);
}

TEST(MlpLayoutTest, LibsvmHasOneFieldAndNoNumericFeatures) {
  absl::StatusOr<MlpLayout> l = MlpLayoutFromJob(
      Job("model { kind: KIND_MLP embedding_dim: 4 hidden: 8 }"));
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->input_dim, 4u);
  ASSERT_EQ(l->layers.size(), 2u);
  EXPECT_EQ(l->num_params, 4u * 8 + 8 + 8 + 1);
  EXPECT_EQ(l->dense_rows, 1u);
}

TEST(MlpLayoutTest, RejectsOutOfRangeValuesNamingTheField) {
  for (const char* text :
       {"model { embedding_dim: 2000 }", "model { hidden: 0 }",
        "model { hidden: [1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1] }",
        "model { dropout: 1 }", "model { dropout: -0.1 }",
        "model { dropout: nan }"}) {
    absl::StatusOr<MlpLayout> l = MlpLayoutFromJob(Job(text));
    ASSERT_FALSE(l.ok()) << text;
    EXPECT_NE(l.status().message().find("model."), std::string::npos)
        << l.status();
  }
}

}  // namespace
}  // namespace petrel
