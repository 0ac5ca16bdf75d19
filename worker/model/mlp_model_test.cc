#include "worker/model/mlp_model.h"

#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

#include "job/model_layout.h"
#include "kernels/device.h"

namespace petrel {
namespace {

pb::JobConfig Job(const std::string& model) {
  pb::JobConfig job;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(
      "data { format: FORMAT_CRITEO } model { kind: KIND_MLP " + model + " }",
      &job));
  return job;
}

// A random Criteo-shaped batch (39 fields, 13 numeric features) over
// `unique` rows, and random rows for every table of `model`.
struct Inputs {
  std::vector<uint32_t> offsets{0};
  std::vector<uint32_t> inverse;
  std::vector<float> values;
  std::vector<uint32_t> fields;
  std::vector<float> labels;
  std::vector<float> numeric;
  std::vector<std::vector<float>> rows;

  ModelBatch batch() const {
    ModelBatch b;
    b.sparse = SparseBatchView{offsets, inverse, values};
    b.labels = labels;
    b.fields = fields;
    b.numeric = numeric;
    return b;
  }
  std::vector<absl::Span<const float>> spans() const {
    return {rows.begin(), rows.end()};
  }
};

Inputs RandomInputs(const Model& model, const MlpLayout& layout, size_t n,
                    size_t unique, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  Inputs in;
  for (size_t i = 0; i < n; ++i) {
    const int nnz = 3 + static_cast<int>(rng() % 6);
    for (int j = 0; j < nnz; ++j) {
      in.inverse.push_back(static_cast<uint32_t>(rng() % unique));
      in.values.push_back(0.5f + 0.5f * std::abs(u(rng)));
      // Repeat some fields so that pooling really sums or averages.
      in.fields.push_back(static_cast<uint32_t>(rng() % 5) * 7 % 39);
    }
    in.offsets.push_back(static_cast<uint32_t>(in.inverse.size()));
    in.labels.push_back(static_cast<float>(rng() % 2));
    for (int k = 0; k < layout.num_numeric; ++k) in.numeric.push_back(u(rng));
  }
  for (const ModelTable& t : model.tables()) {
    size_t count = t.dense_keys > 0 ? t.dense_keys * static_cast<size_t>(t.dim)
                                    : (unique + (t.with_bias ? 1 : 0)) * t.dim;
    std::vector<float>& r = in.rows.emplace_back(count);
    for (float& x : r) x = 0.4f * u(rng);
  }
  return in;
}

double LossOf(Model* model, const Inputs& in) {
  std::vector<float> probs;
  std::vector<std::vector<float>> grads;
  absl::StatusOr<double> loss =
      model->ForwardBackward(in.batch(), in.spans(), &probs, &grads);
  EXPECT_TRUE(loss.ok()) << loss.status();
  return loss.ok() ? *loss : 0;
}

class MlpModelGradientTest : public ::testing::TestWithParam<const char*> {};

// Every gradient the model pushes matches central finite differences of
// its loss: embeddings, every layer's weights and biases, the wide part.
TEST_P(MlpModelGradientTest, GradientsMatchFiniteDifferences) {
  pb::JobConfig job = Job(GetParam());
  absl::StatusOr<MlpLayout> layout = MlpLayoutFromJob(job);
  ASSERT_TRUE(layout.ok());
  absl::StatusOr<std::unique_ptr<Model>> model =
      CreateMlpModel(job, Device::Cpu());
  ASSERT_TRUE(model.ok()) << model.status();
  Inputs in = RandomInputs(**model, *layout, 6, 9, 17);
  std::vector<float> probs;
  std::vector<std::vector<float>> grads;
  ASSERT_TRUE(
      (*model)->ForwardBackward(in.batch(), in.spans(), &probs, &grads).ok());
  ASSERT_EQ(grads.size(), in.rows.size());
  std::mt19937 rng(3);
  int checked = 0;
  int significant = 0;  // checks of gradients far from 0
  for (size_t t = 0; t < in.rows.size(); ++t) {
    ASSERT_EQ(grads[t].size(), in.rows[t].size());
    const bool dense = (*model)->tables()[t].dense_keys > 0;
    for (int s = 0; s < 60; ++s) {
      size_t i = dense ? rng() % layout->num_params : rng() % grads[t].size();
      const float saved = in.rows[t][i];
      const float eps = 1e-2f;
      in.rows[t][i] = saved + eps;
      double up = LossOf(model->get(), in);
      in.rows[t][i] = saved - eps;
      double down = LossOf(model->get(), in);
      in.rows[t][i] = saved;
      double numeric = (up - down) / (2 * eps);
      // Float losses carry ~1e-6 of noise; /2eps makes it ~5e-5.
      EXPECT_NEAR(grads[t][i], numeric, 2e-4 + 1e-2 * std::abs(numeric))
          << "table " << (*model)->tables()[t].id << " index " << i;
      ++checked;
      if (std::abs(numeric) > 1e-2) ++significant;
    }
    if (dense) {
      for (size_t i = layout->num_params; i < grads[t].size(); ++i) {
        EXPECT_EQ(grads[t][i], 0.0f) << "padding " << i;
      }
    }
  }
  EXPECT_GE(checked, 120);
  EXPECT_GE(significant, 40);
}

INSTANTIATE_TEST_SUITE_P(
    Configs, MlpModelGradientTest,
    ::testing::Values("embedding_dim: 2 hidden: 4",
                      "embedding_dim: 3 hidden: [5, 3] wide: true",
                      "embedding_dim: 2 hidden: 4 pooling: POOLING_MEAN"));

TEST(MlpModelTest, PredictGivesTheTrainingProbabilitiesAndLossIsTheirs) {
  pb::JobConfig job = Job("embedding_dim: 4 hidden: [8, 4] wide: true");
  absl::StatusOr<MlpLayout> layout = MlpLayoutFromJob(job);
  ASSERT_TRUE(layout.ok());
  auto model = CreateMlpModel(job, Device::Cpu());
  ASSERT_TRUE(model.ok());
  Inputs in = RandomInputs(**model, *layout, 20, 30, 5);
  std::vector<float> train_probs, probs;
  std::vector<std::vector<float>> grads;
  absl::StatusOr<double> loss =
      (*model)->ForwardBackward(in.batch(), in.spans(), &train_probs, &grads);
  ASSERT_TRUE(loss.ok());
  ASSERT_TRUE((*model)->Predict(in.batch(), in.spans(), &probs).ok());
  ASSERT_EQ(probs.size(), 20u);
  double expected = 0;
  for (size_t i = 0; i < probs.size(); ++i) {
    EXPECT_FLOAT_EQ(probs[i], train_probs[i]);
    EXPECT_GT(probs[i], 0.0f);
    EXPECT_LT(probs[i], 1.0f);
    expected -= in.labels[i] ? std::log(probs[i]) : std::log(1 - probs[i]);
  }
  EXPECT_NEAR(*loss, expected, 1e-4 * expected);
}

TEST(MlpModelTest, TablesMatchTheLayout) {
  pb::JobConfig job = Job("wide: true");
  absl::StatusOr<MlpLayout> layout = MlpLayoutFromJob(job);
  ASSERT_TRUE(layout.ok());
  auto model = CreateMlpModel(job, Device::Cpu());
  ASSERT_TRUE(model.ok());
  const auto& t = (*model)->tables();
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0].id, kLinearTable);
  EXPECT_TRUE(t[0].with_bias);
  EXPECT_EQ(t[1].id, kEmbeddingTable);
  EXPECT_EQ(t[1].dim, 16);
  EXPECT_EQ(t[2].id, kMlpTable);
  EXPECT_EQ(t[2].dense_keys, layout->dense_rows);
  EXPECT_TRUE((*model)->needs_fields());
}

TEST(MlpModelTest, RejectsBatchesThatDoNotFitTheModel) {
  pb::JobConfig job = Job("embedding_dim: 2 hidden: 4");
  absl::StatusOr<MlpLayout> layout = MlpLayoutFromJob(job);
  ASSERT_TRUE(layout.ok());
  auto model = CreateMlpModel(job, Device::Cpu());
  ASSERT_TRUE(model.ok());
  std::vector<float> probs;
  std::vector<std::vector<float>> grads;
  Inputs in = RandomInputs(**model, *layout, 4, 5, 9);
  Inputs bad_field = in;
  bad_field.fields[0] = 39;
  Inputs no_numeric = in;
  no_numeric.numeric.clear();
  Inputs bad_row = in;
  bad_row.inverse[0] = 5;
  Inputs short_weights = in;
  short_weights.rows[1].pop_back();
  for (const Inputs* bad :
       {&bad_field, &no_numeric, &bad_row, &short_weights}) {
    absl::StatusOr<double> r =
        (*model)->ForwardBackward(bad->batch(), bad->spans(), &probs, &grads);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument)
        << r.status();
  }
}

struct Outputs {
  double loss = 0;
  std::vector<float> probs;
  std::vector<std::vector<float>> grads;
};

// The first training batch of a new model built from `model`.
Outputs FirstBatch(const std::string& model, const Inputs& in) {
  Outputs out;
  auto m = CreateMlpModel(Job(model), Device::Cpu());
  EXPECT_TRUE(m.ok()) << m.status();
  if (!m.ok()) return out;
  absl::StatusOr<double> loss =
      (*m)->ForwardBackward(in.batch(), in.spans(), &out.probs, &out.grads);
  EXPECT_TRUE(loss.ok()) << loss.status();
  out.loss = loss.ok() ? *loss : 0;
  return out;
}

// Example 0 of `in` (over 6 unique rows, row 5 unused) with one more
// position: row 5 in cross field 39.
Inputs WithCross(Inputs in) {
  in.inverse.insert(in.inverse.begin() + in.offsets[1], 5);
  in.values.insert(in.values.begin() + in.offsets[1], 1.0f);
  in.fields.insert(in.fields.begin() + in.offsets[1], 39);
  for (size_t i = 1; i < in.offsets.size(); ++i) ++in.offsets[i];
  return in;
}

double Logit(float p) { return std::log(p / (1 - p)); }

TEST(MlpModelTest, CrossesFeedTheWidePartOnlyUnlessEmbedded) {
  const std::string wide_only =
      "embedding_dim: 3 hidden: 4 wide: true crosses { pairs { a: 1 b: 2 } }";
  pb::JobConfig job = Job(wide_only);
  absl::StatusOr<MlpLayout> layout = MlpLayoutFromJob(job);
  ASSERT_TRUE(layout.ok());
  EXPECT_EQ(layout->num_fields, 39);
  auto model = CreateMlpModel(job, Device::Cpu());
  ASSERT_TRUE(model.ok());
  // The embedding table holds the keys of the 39 base fields only.
  EXPECT_EQ((*model)->tables()[1].id, kEmbeddingTable);
  EXPECT_EQ((*model)->tables()[1].key_fields, 39u);
  Inputs plain = RandomInputs(**model, *layout, 4, 6, 3);
  // Rows 0..4 in the base fields; row 5: the cross's only, so it has a wide
  // row but no embedding row.
  for (size_t j = 0; j < plain.inverse.size(); ++j) plain.inverse[j] = j % 5;
  plain.rows[1].resize(5 * 3);
  const Inputs crossed = WithCross(plain);
  const Outputs a = FirstBatch(wide_only, plain);
  const Outputs b = FirstBatch(wide_only, crossed);
  ASSERT_EQ(b.probs.size(), 4u);
  // The cross adds its wide weight to example 0's logit, nothing else.
  const float w = plain.rows[0][5];  // table 0 (wide) first
  EXPECT_NEAR(Logit(b.probs[0]) - Logit(a.probs[0]), w, 1e-4);
  for (size_t i = 1; i < 4; ++i) EXPECT_FLOAT_EQ(b.probs[i], a.probs[i]);
  EXPECT_NE(b.grads[0][5], 0.0f);        // wide gradient
  EXPECT_EQ(b.grads[1].size(), 5u * 3);  // no embedding row for the cross
  // Embedding rows for the cross's key too are refused.
  Inputs extra = crossed;
  extra.rows[1].resize(6 * 3);
  {
    std::vector<float> p;
    std::vector<std::vector<float>> g;
    EXPECT_TRUE(absl::IsInvalidArgument(
        (*model)
            ->ForwardBackward(extra.batch(), extra.spans(), &p, &g)
            .status()));
  }
  // A field past the crosses is refused.
  Inputs bad = crossed;
  bad.fields[plain.offsets[1]] = 40;
  std::vector<float> probs;
  std::vector<std::vector<float>> grads;
  EXPECT_TRUE(absl::IsInvalidArgument(
      (*model)
          ->ForwardBackward(bad.batch(), bad.spans(), &probs, &grads)
          .status()));

  // With embed, field 39 is an embedding field: the row gets a gradient.
  const std::string embedded =
      "embedding_dim: 3 hidden: 4 wide: true crosses { pairs { a: 1 b: 2 } "
      "embed: true }";
  layout = MlpLayoutFromJob(Job(embedded));
  ASSERT_TRUE(layout.ok());
  EXPECT_EQ(layout->num_fields, 40);
  auto emb_model = CreateMlpModel(Job(embedded), Device::Cpu());
  ASSERT_TRUE(emb_model.ok());
  EXPECT_EQ((*emb_model)->tables()[1].key_fields, 0u);  // every key
  Inputs e = RandomInputs(**emb_model, *layout, 4, 6, 3);
  for (uint32_t& r : e.inverse) r %= 5;
  const Outputs c = FirstBatch(embedded, WithCross(e));
  float norm = 0;
  for (int k = 0; k < 3; ++k) norm += std::abs(c.grads[1][5 * 3 + k]);
  EXPECT_GT(norm, 0.0f);
}

constexpr char kDropout[] =
    "embedding_dim: 3 hidden: [6, 5] wide: true dropout: 0.4 dropout_seed: 8";

// A new model's first batch has the same mask for the same seed, so the
// gradients of that batch can be checked by finite differences, each
// evaluation on a new model: they are the gradients of the masked network.
TEST(MlpModelTest, DropoutGradientsMatchFiniteDifferencesOfTheMaskedLoss) {
  pb::JobConfig job = Job(kDropout);
  absl::StatusOr<MlpLayout> layout = MlpLayoutFromJob(job);
  ASSERT_TRUE(layout.ok());
  auto model = CreateMlpModel(job, Device::Cpu());
  ASSERT_TRUE(model.ok());
  Inputs in = RandomInputs(**model, *layout, 6, 9, 17);
  const Outputs base = FirstBatch(kDropout, in);
  ASSERT_EQ(base.grads.size(), in.rows.size());
  std::mt19937 rng(3);
  int significant = 0;
  size_t zero_dense = 0;  // hidden weights of dropped units get 0
  for (size_t t = 0; t < in.rows.size(); ++t) {
    const bool dense = (*model)->tables()[t].dense_keys > 0;
    for (int s = 0; s < 60; ++s) {
      size_t i = dense ? rng() % layout->num_params : rng() % in.rows[t].size();
      const float saved = in.rows[t][i];
      const float eps = 1e-2f;
      in.rows[t][i] = saved + eps;
      double up = FirstBatch(kDropout, in).loss;
      in.rows[t][i] = saved - eps;
      double down = FirstBatch(kDropout, in).loss;
      in.rows[t][i] = saved;
      double numeric = (up - down) / (2 * eps);
      EXPECT_NEAR(base.grads[t][i], numeric, 2e-4 + 1e-2 * std::abs(numeric))
          << "table " << (*model)->tables()[t].id << " index " << i;
      if (std::abs(numeric) > 1e-2) ++significant;
    }
    if (dense) {
      for (size_t i = 0; i < layout->num_params; ++i) {
        zero_dense += base.grads[t][i] == 0.0f;
      }
    }
  }
  EXPECT_GE(significant, 40);
  // At rate 0.4 some units of the 6 x 6-example first layer are dropped for
  // every example, and their incoming weights get no gradient.
  EXPECT_GT(zero_dense, 0u);
}

TEST(MlpModelTest, DropoutMasksRepeatPerSeedAndChangePerBatch) {
  pb::JobConfig job = Job(kDropout);
  absl::StatusOr<MlpLayout> layout = MlpLayoutFromJob(job);
  ASSERT_TRUE(layout.ok());
  auto model = CreateMlpModel(job, Device::Cpu());
  ASSERT_TRUE(model.ok());
  Inputs in = RandomInputs(**model, *layout, 50, 40, 6);
  const Outputs a = FirstBatch(kDropout, in);
  const Outputs b = FirstBatch(kDropout, in);
  EXPECT_EQ(a.probs, b.probs);
  EXPECT_EQ(a.grads, b.grads);
  const std::string other_seed =
      "embedding_dim: 3 hidden: [6, 5] wide: true dropout: 0.4 "
      "dropout_seed: 9";
  EXPECT_NE(FirstBatch(other_seed, in).probs, a.probs);
  // The same model's next batch draws a new mask.
  Outputs first, second;
  ASSERT_TRUE(
      (*model)
          ->ForwardBackward(in.batch(), in.spans(), &first.probs, &first.grads)
          .ok());
  ASSERT_TRUE((*model)
                  ->ForwardBackward(in.batch(), in.spans(), &second.probs,
                                    &second.grads)
                  .ok());
  EXPECT_EQ(first.probs, a.probs);
  EXPECT_NE(second.probs, first.probs);
}

// Dropout 0 is the model without it; with dropout, training batches differ
// from it but Predict (evaluation) uses every unit and gives its numbers.
TEST(MlpModelTest, PredictUsesEveryUnitAndZeroDropoutIsNone) {
  const std::string plain = "embedding_dim: 3 hidden: [6, 5] wide: true";
  pb::JobConfig job = Job(kDropout);
  absl::StatusOr<MlpLayout> layout = MlpLayoutFromJob(job);
  ASSERT_TRUE(layout.ok());
  auto model = CreateMlpModel(job, Device::Cpu());
  ASSERT_TRUE(model.ok());
  Inputs in = RandomInputs(**model, *layout, 30, 25, 12);
  const Outputs none = FirstBatch(plain, in);
  const Outputs zero = FirstBatch(plain + " dropout: 0 dropout_seed: 8", in);
  EXPECT_EQ(zero.probs, none.probs);
  EXPECT_EQ(zero.grads, none.grads);
  EXPECT_NE(FirstBatch(kDropout, in).probs, none.probs);
  std::vector<float> probs;
  ASSERT_TRUE((*model)->Predict(in.batch(), in.spans(), &probs).ok());
  EXPECT_EQ(probs, none.probs);
  // Also after training batches (the mask of the last one is not reused).
  Outputs train;
  ASSERT_TRUE(
      (*model)
          ->ForwardBackward(in.batch(), in.spans(), &train.probs, &train.grads)
          .ok());
  ASSERT_TRUE((*model)->Predict(in.batch(), in.spans(), &probs).ok());
  EXPECT_EQ(probs, none.probs);
}

// Dropout runs on the CPU only: a CUDA model with it is refused, naming
// the field.
TEST(MlpModelTest, DropoutIsRefusedOnCuda) {
  std::string why;
  if (CudaDeviceCount(&why) == 0) {
    GTEST_SKIP() << "no CUDA device: " << why;
  }
  auto gpu = ComputeDevice::Open(DeviceChoice::kCuda);
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  auto model = CreateMlpModel(Job(kDropout), (*gpu)->device());
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.status().message().find("model.dropout"), std::string::npos)
      << model.status();
  EXPECT_TRUE(CreateMlpModel(Job("wide: true"), (*gpu)->device()).ok());
}

// On a GPU, the CUDA path gives the CPU path's numbers.
TEST(MlpModelTest, CudaMatchesCpu) {
  std::string why;
  if (CudaDeviceCount(&why) == 0) {
    GTEST_SKIP() << "no CUDA device: " << why;
  }
  pb::JobConfig job = Job("embedding_dim: 8 hidden: [32, 16] wide: true");
  absl::StatusOr<MlpLayout> layout = MlpLayoutFromJob(job);
  ASSERT_TRUE(layout.ok());
  auto gpu = ComputeDevice::Open(DeviceChoice::kCuda);
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  auto cpu_model = CreateMlpModel(job, Device::Cpu());
  auto gpu_model = CreateMlpModel(job, (*gpu)->device());
  ASSERT_TRUE(cpu_model.ok() && gpu_model.ok());
  Inputs in = RandomInputs(**cpu_model, *layout, 300, 200, 23);
  std::vector<float> cpu_probs, gpu_probs;
  std::vector<std::vector<float>> cpu_grads, gpu_grads;
  auto cpu_loss =
      (*cpu_model)
          ->ForwardBackward(in.batch(), in.spans(), &cpu_probs, &cpu_grads);
  auto gpu_loss =
      (*gpu_model)
          ->ForwardBackward(in.batch(), in.spans(), &gpu_probs, &gpu_grads);
  ASSERT_TRUE(cpu_loss.ok() && gpu_loss.ok()) << gpu_loss.status();
  EXPECT_NEAR(*gpu_loss, *cpu_loss, 1e-4 * *cpu_loss);
  for (size_t i = 0; i < cpu_probs.size(); ++i) {
    EXPECT_NEAR(gpu_probs[i], cpu_probs[i], 1e-4) << i;
  }
  for (size_t t = 0; t < cpu_grads.size(); ++t) {
    ASSERT_EQ(gpu_grads[t].size(), cpu_grads[t].size());
    for (size_t i = 0; i < cpu_grads[t].size(); ++i) {
      EXPECT_NEAR(gpu_grads[t][i], cpu_grads[t][i],
                  1e-4 + 1e-3 * std::abs(cpu_grads[t][i]))
          << "table " << t << " index " << i;
    }
  }
}

}  // namespace
}  // namespace petrel
