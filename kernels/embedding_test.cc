// Embedding pooling against a float64 reference on fresh random batches.
// Error bounds are worst-case float32 bounds (testing::Gamma, u = 2^-24):
// a pooled value summing c products has |error| <= gamma_{c+1} times the
// sum of the products' magnitudes, and mean pooling adds one rounding for
// the division (gamma_{c+2}); a gradient value summing M scaled products
// (one more rounding each for mean's value / count) is within
// gamma_{M+2} of the sum of their magnitudes.
#include "kernels/embedding.h"

#include <cmath>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

#include "kernels/testing/random_batch.h"
#include "kernels/testing/traced_rng.h"

namespace petrel {
namespace {

using testing::Gamma;
using testing::RandomBatch;

const Device kCpu = Device::Cpu();

// A random batch with random fields (some empty examples, and fields with
// no position when num_fields exceeds the features), deduplicated.
RandomBatch FreshBatch(std::mt19937_64* rng) {
  std::uniform_int_distribution<size_t> examples(1, 120), fields(1, 12);
  std::uniform_int_distribution<size_t> features(0, 30), pool(2, 500);
  const size_t max_features = features(*rng);
  RandomBatch batch = testing::MakeRandomBatch(examples(*rng), 0, max_features,
                                               pool(*rng), rng);
  batch.Deduplicate();
  testing::AssignRandomFields(fields(*rng), rng, &batch);
  return batch;
}

size_t FreshDim(std::mt19937_64* rng) {
  // The templated dims (4, 8, 16, 32, 64) and run-time ones.
  const size_t dims[] = {1, 3, 4, 8, 13, 16, 32, 64};
  return dims[std::uniform_int_distribution<size_t>(0, 7)(*rng)];
}

// Per-(example, field) sums in double with their magnitudes and counts.
struct Pooled {
  std::vector<double> value, scale;  // [n x F x dim]
  std::vector<size_t> count;         // [n x F]
};

Pooled ReferenceForward(const RandomBatch& b, const std::vector<float>& rows,
                        size_t dim, Pooling pooling) {
  const size_t cells = b.num_examples() * b.num_fields;
  Pooled p{std::vector<double>(cells * dim), std::vector<double>(cells * dim),
           std::vector<size_t>(cells)};
  for (size_t i = 0; i < b.num_examples(); ++i) {
    for (uint32_t j = b.offsets[i]; j < b.offsets[i + 1]; ++j) {
      const size_t cell = i * b.num_fields + b.fields[j];
      ++p.count[cell];
      for (size_t c = 0; c < dim; ++c) {
        const double t = double{b.values[j]} * rows[b.inverse[j] * dim + c];
        p.value[cell * dim + c] += t;
        p.scale[cell * dim + c] += std::fabs(t);
      }
    }
  }
  if (pooling == Pooling::kMean) {
    for (size_t cell = 0; cell < cells; ++cell) {
      for (size_t c = 0; c < dim && p.count[cell] > 0; ++c) {
        p.value[cell * dim + c] /= p.count[cell];
        p.scale[cell * dim + c] /= p.count[cell];
      }
    }
  }
  return p;
}

// grad_rows in double, with magnitudes and occurrence counts per row.
void ReferenceBackward(const RandomBatch& b, const std::vector<float>& grad_out,
                       size_t dim, Pooling pooling, std::vector<double>* grad,
                       std::vector<double>* scale,
                       std::vector<size_t>* occurrences) {
  const Pooled ones = ReferenceForward(
      b, std::vector<float>(b.unique.size() * dim, 1.0f), dim, Pooling::kSum);
  grad->assign(b.unique.size() * dim, 0.0);
  scale->assign(grad->size(), 0.0);
  occurrences->assign(b.unique.size(), 0);
  for (size_t i = 0; i < b.num_examples(); ++i) {
    for (uint32_t j = b.offsets[i]; j < b.offsets[i + 1]; ++j) {
      const size_t cell = i * b.num_fields + b.fields[j];
      double x = b.values[j];
      if (pooling == Pooling::kMean) x /= ones.count[cell];
      ++(*occurrences)[b.inverse[j]];
      for (size_t c = 0; c < dim; ++c) {
        const double t = x * grad_out[cell * dim + c];
        (*grad)[b.inverse[j] * dim + c] += t;
        (*scale)[b.inverse[j] * dim + c] += std::fabs(t);
      }
    }
  }
}

class EmbeddingTest : public ::testing::TestWithParam<Pooling> {};

TEST_P(EmbeddingTest, ForwardMatchesFloat64Reference) {
  testing::TracedRng rng;
  const Pooling pooling = GetParam();
  for (int trial = 0; trial < 20; ++trial) {
    const RandomBatch b = FreshBatch(&rng);
    const size_t dim = FreshDim(&rng);
    const auto rows =
        testing::RandomNonZero(b.unique.size() * dim, 0.01f, 1.0f, &rng);
    // Stale contents must be overwritten.
    std::vector<float> out(b.num_examples() * b.num_fields * dim, 123.0f);
    ASSERT_TRUE(EmbeddingPoolForward(kCpu, b.FieldView(), rows, dim, pooling,
                                     absl::MakeSpan(out))
                    .ok());
    const Pooled ref = ReferenceForward(b, rows, dim, pooling);
    const size_t extra = pooling == Pooling::kMean ? 2 : 1;
    for (size_t q = 0; q < out.size(); ++q) {
      const size_t count = ref.count[q / dim];
      ASSERT_LE(std::fabs(out[q] - ref.value[q]),
                Gamma(count + extra) * ref.scale[q])
          << "trial " << trial << " dim " << dim << " entry " << q;
    }
  }
}

TEST_P(EmbeddingTest, BackwardMatchesFloat64Reference) {
  testing::TracedRng rng;
  const Pooling pooling = GetParam();
  for (int trial = 0; trial < 20; ++trial) {
    const RandomBatch b = FreshBatch(&rng);
    const size_t dim = FreshDim(&rng);
    const auto grad_out = testing::RandomNonZero(
        b.num_examples() * b.num_fields * dim, 0.01f, 1.0f, &rng);
    std::vector<float> grad(b.unique.size() * dim, 123.0f);
    ASSERT_TRUE(EmbeddingPoolBackward(kCpu, b.FieldView(), grad_out, dim,
                                      pooling, true, absl::MakeSpan(grad))
                    .ok());
    std::vector<double> want, scale;
    std::vector<size_t> occurrences;
    ReferenceBackward(b, grad_out, dim, pooling, &want, &scale, &occurrences);
    for (size_t q = 0; q < grad.size(); ++q) {
      ASSERT_LE(std::fabs(grad[q] - want[q]),
                Gamma(occurrences[q / dim] + 2) * scale[q])
          << "trial " << trial << " dim " << dim << " entry " << q;
    }
  }
}

// The forward is linear in the rows and the backward is its adjoint:
// <grad_out, Forward(rows)> == <Backward(grad_out), rows>.
TEST_P(EmbeddingTest, BackwardIsTheAdjointOfForward) {
  testing::TracedRng rng;
  for (int trial = 0; trial < 10; ++trial) {
    const RandomBatch b = FreshBatch(&rng);
    const size_t dim = FreshDim(&rng);
    const auto rows =
        testing::RandomNonZero(b.unique.size() * dim, 0.01f, 1.0f, &rng);
    const auto grad_out = testing::RandomNonZero(
        b.num_examples() * b.num_fields * dim, 0.01f, 1.0f, &rng);
    std::vector<float> out(grad_out.size()), grad(rows.size());
    ASSERT_TRUE(EmbeddingPoolForward(kCpu, b.FieldView(), rows, dim, GetParam(),
                                     absl::MakeSpan(out))
                    .ok());
    ASSERT_TRUE(EmbeddingPoolBackward(kCpu, b.FieldView(), grad_out, dim,
                                      GetParam(), false, absl::MakeSpan(grad))
                    .ok());
    // scale: sum over every product of |grad_out x value x row|.
    const Pooled ref = ReferenceForward(b, rows, dim, GetParam());
    double lhs = 0, rhs = 0, scale = 0;
    for (size_t q = 0; q < out.size(); ++q) {
      lhs += double{grad_out[q]} * out[q];
      scale += std::fabs(grad_out[q]) * ref.scale[q];
    }
    for (size_t q = 0; q < rows.size(); ++q) rhs += double{grad[q]} * rows[q];
    // Both sides carry the float32 errors of their kernel: well below
    // 1e-4 of the magnitudes for these sizes (<= 30 terms per sum).
    EXPECT_NEAR(lhs, rhs, 1e-4 * scale + 1e-6) << "trial " << trial;
  }
}

TEST_P(EmbeddingTest, BackwardIsBitwiseRepeatable) {
  std::mt19937_64 rng(testing::FreshSeed());
  const RandomBatch b = FreshBatch(&rng);
  const size_t dim = 16;
  const auto grad_out = testing::RandomNonZero(
      b.num_examples() * b.num_fields * dim, 0.01f, 1.0f, &rng);
  std::vector<float> first(b.unique.size() * dim), second(first.size());
  ASSERT_TRUE(EmbeddingPoolBackward(kCpu, b.FieldView(), grad_out, dim,
                                    GetParam(), true, absl::MakeSpan(first))
                  .ok());
  ASSERT_TRUE(EmbeddingPoolBackward(kCpu, b.FieldView(), grad_out, dim,
                                    GetParam(), false, absl::MakeSpan(second))
                  .ok());
  EXPECT_TRUE(testing::SameBits(first, second));
}

INSTANTIATE_TEST_SUITE_P(Pooling, EmbeddingTest,
                         ::testing::Values(Pooling::kSum, Pooling::kMean),
                         [](const ::testing::TestParamInfo<Pooling>& info) {
                           return info.param == Pooling::kSum ? "Sum" : "Mean";
                         });

// Hand-checked: example 0 has two positions in field 1 and none in field 0;
// example 1 is empty.
TEST(EmbeddingPoolTest, EmptyFieldsAndExamplesPoolToZero) {
  const std::vector<uint32_t> offsets = {0, 2, 2}, inverse = {0, 1};
  const std::vector<uint32_t> fields = {1, 1};
  const std::vector<float> values = {2.0f, -1.0f}, rows = {1.0f, 3.0f};
  FieldBatchView view;
  view.sparse.offsets = offsets;
  view.sparse.inverse = inverse;
  view.sparse.values = values;
  view.fields = fields;
  view.num_fields = 2;
  std::vector<float> out(4, 7.0f);
  ASSERT_TRUE(EmbeddingPoolForward(kCpu, view, rows, 1, Pooling::kSum,
                                   absl::MakeSpan(out))
                  .ok());
  EXPECT_EQ(out, (std::vector<float>{0.0f, -1.0f, 0.0f, 0.0f}));
  ASSERT_TRUE(EmbeddingPoolForward(kCpu, view, rows, 1, Pooling::kMean,
                                   absl::MakeSpan(out))
                  .ok());
  EXPECT_EQ(out, (std::vector<float>{0.0f, -0.5f, 0.0f, 0.0f}));
  const std::vector<float> grad_out = {5.0f, 4.0f, 9.0f, 9.0f};
  std::vector<float> grad(2, 7.0f);
  ASSERT_TRUE(EmbeddingPoolBackward(kCpu, view, grad_out, 1, Pooling::kMean,
                                    true, absl::MakeSpan(grad))
                  .ok());
  EXPECT_EQ(grad, (std::vector<float>{4.0f, -2.0f}));
}

TEST(EmbeddingPoolTest, CriteoLikeBatchMatchesReference) {
  std::mt19937_64 rng(testing::FreshSeed());
  RandomBatch b = testing::MakeCriteoLikeBatch(64, 1000, &rng);
  b.Deduplicate();
  const size_t dim = 16;
  const auto rows =
      testing::RandomNonZero(b.unique.size() * dim, 0.01f, 1.0f, &rng);
  std::vector<float> out(64 * 39 * dim);
  ASSERT_TRUE(EmbeddingPoolForward(kCpu, b.FieldView(), rows, dim,
                                   Pooling::kSum, absl::MakeSpan(out))
                  .ok());
  // One position per field: each pooled value is one rounded product.
  const Pooled ref = ReferenceForward(b, rows, dim, Pooling::kSum);
  for (size_t q = 0; q < out.size(); ++q) {
    ASSERT_LE(std::fabs(out[q] - ref.value[q]), Gamma(1) * ref.scale[q]);
  }
}

TEST(EmbeddingPoolTest, RejectsShapeMismatches) {
  std::mt19937_64 rng(testing::FreshSeed());
  RandomBatch b = testing::MakeRandomBatch(8, 1, 5, 10, &rng);
  b.Deduplicate();
  testing::AssignRandomFields(3, &rng, &b);
  const size_t dim = 4;
  std::vector<float> rows(b.unique.size() * dim, 0.5f), out(8 * 3 * dim);
  auto forward = [&](const FieldBatchView& v, size_t d, size_t rows_size,
                     size_t out_size) {
    return EmbeddingPoolForward(
               kCpu, v, absl::MakeConstSpan(rows).first(rows_size), d,
               Pooling::kSum, absl::MakeSpan(out).first(out_size))
        .code();
  };
  auto backward = [&](const FieldBatchView& v, size_t grad_out_size,
                      size_t grad_rows_size) {
    return EmbeddingPoolBackward(
               kCpu, v, absl::MakeConstSpan(out).first(grad_out_size), dim,
               Pooling::kMean, true, absl::MakeSpan(rows).first(grad_rows_size))
        .code();
  };
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  const FieldBatchView good = b.FieldView();
  ASSERT_EQ(forward(good, dim, rows.size(), out.size()), absl::StatusCode::kOk);
  EXPECT_EQ(forward(good, 0, rows.size(), out.size()), kInvalid);  // dim 0
  EXPECT_EQ(forward(good, dim, rows.size() - 1, out.size()), kInvalid);
  EXPECT_EQ(forward(good, dim, rows.size() - dim, out.size()),
            kInvalid);  // an inverse entry names a missing row
  EXPECT_EQ(forward(good, dim, rows.size(), out.size() - 1), kInvalid);
  EXPECT_EQ(backward(good, out.size() - 1, rows.size()), kInvalid);
  EXPECT_EQ(backward(good, out.size(), rows.size() - 1), kInvalid);
  FieldBatchView bad = good;
  bad.fields = bad.fields.first(bad.fields.size() - 1);
  EXPECT_EQ(forward(bad, dim, rows.size(), out.size()), kInvalid);
  EXPECT_EQ(backward(bad, out.size(), rows.size()), kInvalid);
  std::vector<uint32_t> fields = b.fields;
  fields.back() = 3;  // out of range for 3 fields
  bad = good;
  bad.fields = fields;
  EXPECT_EQ(forward(bad, dim, rows.size(), out.size()), kInvalid);
  EXPECT_EQ(backward(bad, out.size(), rows.size()), kInvalid);
  bad = good;
  bad.num_fields = 0;
  EXPECT_EQ(forward(bad, dim, rows.size(), 0), kInvalid);
  bad = good;
  bad.sparse.values = bad.sparse.values.first(bad.sparse.values.size() - 1);
  EXPECT_EQ(forward(bad, dim, rows.size(), out.size()), kInvalid);
  bad = good;
  bad.sparse.offsets = {};
  EXPECT_EQ(forward(bad, dim, rows.size(), 0), kInvalid);
}

}  // namespace
}  // namespace petrel
