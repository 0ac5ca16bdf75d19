#include "worker/model/model.h"

#include <memory>
#include <vector>

#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

#include "kernels/device.h"

namespace petrel {
namespace {

// Logistic regression with every weight and the bias at 0: each example's
// probability is 0.5, so its logit gradient is 0.5 - label.
TEST(AverageOverBatchTest, RepeatedKeysAreAveragedOverTheBatchsExamples) {
  pb::JobConfig job;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(
      "model { kind: KIND_LR }", &job));
  absl::StatusOr<std::unique_ptr<Model>> model =
      Model::Create(job, Device::Cpu());
  ASSERT_TRUE(model.ok()) << model.status();
  // Four examples over two unique keys: key 0 in examples 0 and 1 (twice in
  // example 1), key 1 in example 2 only; example 3 has no feature.
  const std::vector<uint32_t> offsets = {0, 1, 3, 4, 4};
  const std::vector<uint32_t> inverse = {0, 0, 0, 1};
  const std::vector<float> values = {1.0f, 1.0f, 2.0f, 4.0f};
  const std::vector<float> labels = {1.0f, 0.0f, 1.0f, 0.0f};
  ModelBatch batch;
  batch.sparse = SparseBatchView{offsets, inverse, values};
  batch.labels = labels;
  const std::vector<float> rows = {0.0f, 0.0f, 0.0f};  // 2 keys + bias
  std::vector<float> probs;
  std::vector<std::vector<float>> grads;
  ASSERT_TRUE(
      (*model)
          ->ForwardBackward(batch, {absl::MakeConstSpan(rows)}, &probs, &grads)
          .ok());
  ASSERT_EQ(grads.size(), 1u);
  ASSERT_EQ(grads[0].size(), 3u);
  // The model's sums: key 0 gets -0.5 * 1 + 0.5 * (1 + 2), key 1 -0.5 * 4,
  // the bias -0.5 + 0.5 - 0.5 + 0.5.
  EXPECT_FLOAT_EQ(grads[0][0], 1.0f);
  EXPECT_FLOAT_EQ(grads[0][1], -2.0f);
  EXPECT_FLOAT_EQ(grads[0][2], 0.0f);
  AverageOverBatch(labels.size(), &grads);
  // Divided by the 4 examples, not by each key's 2 or 1 occurrences.
  EXPECT_FLOAT_EQ(grads[0][0], 0.25f);
  EXPECT_FLOAT_EQ(grads[0][1], -0.5f);
  EXPECT_FLOAT_EQ(grads[0][2], 0.0f);
}

TEST(AverageOverBatchTest, EveryTableIsDividedAndAnEmptyBatchIsLeftAlone) {
  std::vector<std::vector<float>> grads = {{2.0f, -4.0f}, {8.0f}};
  AverageOverBatch(2, &grads);
  EXPECT_EQ(grads, (std::vector<std::vector<float>>{{1.0f, -2.0f}, {4.0f}}));
  AverageOverBatch(0, &grads);
  EXPECT_EQ(grads, (std::vector<std::vector<float>>{{1.0f, -2.0f}, {4.0f}}));
}

// Keys 10 and 40 only at cross positions (field 39), 30 at both a base
// and a cross position.
TEST(SparseTableKeysTest, KeyFieldsLeaveOutKeysOnlyOtherFieldsReferTo) {
  const std::vector<uint64_t> unique = {10, 20, 30, 40};
  const std::vector<uint32_t> inverse = {1, 0, 2, 2, 3};
  const std::vector<uint32_t> fields = {0, 39, 38, 39, 39};
  ModelTable all{kEmbeddingTable, 16, false, 0, 0};
  EXPECT_EQ(SparseTableKeys(all, unique, inverse, fields), unique);
  ModelTable base{kEmbeddingTable, 16, false, 0, 39};
  EXPECT_EQ(SparseTableKeys(base, unique, inverse, fields),
            (std::vector<uint64_t>{20, 30}));
  EXPECT_EQ(TableKeyIndex(39, 4, inverse, fields),
            (std::vector<uint32_t>{kNotInTable, 0, 1, kNotInTable}));
  // A batch without fields is not filtered.
  EXPECT_EQ(SparseTableKeys(base, unique, inverse, {}), unique);
}

}  // namespace
}  // namespace petrel
