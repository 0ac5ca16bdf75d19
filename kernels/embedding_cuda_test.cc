// Embedding pooling on CUDA against the CPU path on the same fresh random
// batches (kernels/embedding.h).
//
// Tolerance: both sides sum each output's terms in float32, the CPU left to
// right, the GPU in the same order but possibly with fused multiply-adds
// (forward, deterministic backward) or in any order (atomic backward). Each
// differs from the exact sum by at most gamma_{L+2} * sum|terms| (L terms,
// one more rounding for the mean's division; Higham 4.2), so they differ
// from each other by at most twice that. The deterministic backward must
// also be bitwise repeatable.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"

#include "kernels/cuda_test_util.h"
#include "kernels/embedding.h"
#include "kernels/testing/random_batch.h"
#include "kernels/testing/traced_rng.h"

namespace petrel {
namespace {

using testing::Gamma;

struct Case {
  size_t examples;
  size_t max_features;
  size_t key_pool;
  size_t num_fields;
  size_t dim;
};

class EmbeddingCudaTest : public testing::CudaTest {
 protected:
  // A random batch (some examples empty, fields repeated within examples)
  // with rows and an output gradient, on the host and on the device.
  void Build(const Case& c, std::mt19937_64* rng) {
    batch_ = testing::MakeRandomBatch(c.examples, 0, c.max_features, c.key_pool,
                                      rng);
    batch_.Deduplicate();
    num_fields_ = c.num_fields;
    dim_ = c.dim;
    fields_.resize(batch_.keys.size());
    std::uniform_int_distribution<uint32_t> field(
        0, static_cast<uint32_t>(c.num_fields - 1));
    for (uint32_t& f : fields_) f = field(*rng);
    rows_ = testing::RandomNonZero(batch_.unique.size() * dim_, 0.1f, 2, rng);
    grad_out_ = testing::RandomNonZero(
        batch_.num_examples() * num_fields_ * dim_, 0.1f, 2, rng);
    d_offsets_ = Upload(batch_.offsets);
    d_inverse_ = Upload(batch_.inverse);
    d_values_ = Upload(batch_.values);
    d_fields_ = Upload(fields_);
    d_rows_ = Upload(rows_);
    d_grad_out_ = Upload(grad_out_);
  }

  FieldBatchView HostView() const {
    FieldBatchView v;
    v.sparse = batch_.View();
    v.fields = fields_;
    v.num_fields = num_fields_;
    return v;
  }

  FieldBatchView DeviceView() const {
    FieldBatchView v;
    v.sparse.offsets = d_offsets_.span();
    v.sparse.inverse = d_inverse_.span();
    v.sparse.values = d_values_.span();
    v.fields = d_fields_.span();
    v.num_fields = num_fields_;
    return v;
  }

  // Per output (forward) or per row (backward): the sum of the terms'
  // magnitudes and the number of terms, in double.
  void ForwardBounds(Pooling pooling, std::vector<double>* abs_sum,
                     std::vector<size_t>* terms) const {
    const size_t width = num_fields_ * dim_;
    abs_sum->assign(batch_.num_examples() * width, 0.0);
    terms->assign(batch_.num_examples() * num_fields_, 0);
    for (size_t i = 0; i < batch_.num_examples(); ++i) {
      for (uint32_t j = batch_.offsets[i]; j < batch_.offsets[i + 1]; ++j) {
        ++(*terms)[i * num_fields_ + fields_[j]];
        for (size_t c = 0; c < dim_; ++c) {
          (*abs_sum)[i * width + fields_[j] * dim_ + c] += std::fabs(
              double{batch_.values[j]} * rows_[batch_.inverse[j] * dim_ + c]);
        }
      }
    }
    if (pooling == Pooling::kMean) {
      for (size_t k = 0; k < abs_sum->size(); ++k) {
        const size_t count = (*terms)[k / dim_];
        if (count > 1) (*abs_sum)[k] /= count;
      }
    }
  }

  void BackwardBounds(Pooling pooling, std::vector<double>* abs_sum,
                      std::vector<size_t>* terms) const {
    const size_t width = num_fields_ * dim_;
    abs_sum->assign(batch_.unique.size() * dim_, 0.0);
    terms->assign(batch_.unique.size(), 0);
    std::vector<size_t> count(num_fields_);
    for (size_t i = 0; i < batch_.num_examples(); ++i) {
      std::fill(count.begin(), count.end(), 0);
      for (uint32_t j = batch_.offsets[i]; j < batch_.offsets[i + 1]; ++j) {
        ++count[fields_[j]];
      }
      for (uint32_t j = batch_.offsets[i]; j < batch_.offsets[i + 1]; ++j) {
        const uint32_t u = batch_.inverse[j];
        ++(*terms)[u];
        double scale = std::fabs(double{batch_.values[j]});
        if (pooling == Pooling::kMean) scale /= count[fields_[j]];
        for (size_t c = 0; c < dim_; ++c) {
          (*abs_sum)[u * dim_ + c] +=
              scale * std::fabs(grad_out_[i * width + fields_[j] * dim_ + c]);
        }
      }
    }
  }

  testing::RandomBatch batch_;
  std::vector<uint32_t> fields_;
  size_t num_fields_ = 1;
  size_t dim_ = 1;
  std::vector<float> rows_, grad_out_;
  DeviceArray<uint32_t> d_offsets_, d_inverse_, d_fields_;
  DeviceArray<float> d_values_, d_rows_, d_grad_out_;
};

// Key pools from heavy duplication (atomics collide) to mostly distinct;
// dims below, at and above a warp and above the 256-thread block; 70000
// examples exceed one grid pass (grid-stride loops).
const Case kCases[] = {
    {1, 3, 4, 2, 1},        {257, 12, 5, 3, 16},    {300, 40, 1000, 39, 33},
    {100, 20, 200, 7, 300}, {70000, 3, 5000, 4, 4},
};

void ExpectWithin(const std::vector<float>& got, const std::vector<float>& want,
                  const std::vector<double>& abs_sum,
                  const std::vector<size_t>& terms, size_t per_term,
                  const char* what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k) {
    const double bound =
        2 * Gamma(terms[k / per_term] + 2) * abs_sum[k] + 1e-30;
    ASSERT_LE(std::fabs(double{got[k]} - want[k]), bound)
        << what << " entry " << k << ": cuda " << got[k] << " cpu " << want[k];
  }
}

TEST_F(EmbeddingCudaTest, ForwardMatchesCpu) {
  testing::TracedRng rng;
  for (const Case& c : kCases) {
    for (Pooling pooling : {Pooling::kSum, Pooling::kMean}) {
      SCOPED_TRACE(::testing::Message()
                   << "examples=" << c.examples << " dim=" << c.dim
                   << " mean=" << (pooling == Pooling::kMean));
      Build(c, &rng);
      const size_t out_size = batch_.num_examples() * num_fields_ * dim_;
      std::vector<float> want(out_size);
      ASSERT_TRUE(EmbeddingPoolForward(cpu_, HostView(), rows_, dim_, pooling,
                                       absl::MakeSpan(want))
                      .ok());
      // Garbage in the output first: the kernel must overwrite everything.
      DeviceArray<float> out =
          Upload(std::vector<float>(out_size, std::nanf("")));
      ASSERT_TRUE(EmbeddingPoolForward(gpu_, DeviceView(), d_rows_.span(), dim_,
                                       pooling, out.span())
                      .ok());
      std::vector<double> abs_sum;
      std::vector<size_t> terms;
      ForwardBounds(pooling, &abs_sum, &terms);
      ExpectWithin(Download(out), want, abs_sum, terms, dim_, "forward");
    }
  }
}

TEST_F(EmbeddingCudaTest, BackwardMatchesCpuInBothModes) {
  testing::TracedRng rng;
  for (const Case& c : kCases) {
    for (Pooling pooling : {Pooling::kSum, Pooling::kMean}) {
      Build(c, &rng);
      std::vector<float> want(batch_.unique.size() * dim_);
      ASSERT_TRUE(EmbeddingPoolBackward(cpu_, HostView(), grad_out_, dim_,
                                        pooling, false, absl::MakeSpan(want))
                      .ok());
      std::vector<double> abs_sum;
      std::vector<size_t> terms;
      BackwardBounds(pooling, &abs_sum, &terms);
      for (bool deterministic : {false, true}) {
        SCOPED_TRACE(::testing::Message()
                     << "examples=" << c.examples << " dim=" << c.dim
                     << " mean=" << (pooling == Pooling::kMean)
                     << " deterministic=" << deterministic);
        DeviceArray<float> grad =
            Upload(std::vector<float>(want.size(), std::nanf("")));
        ASSERT_TRUE(EmbeddingPoolBackward(gpu_, DeviceView(),
                                          d_grad_out_.span(), dim_, pooling,
                                          deterministic, grad.span())
                        .ok());
        ExpectWithin(Download(grad), want, abs_sum, terms, dim_, "backward");
      }
    }
  }
}

TEST_F(EmbeddingCudaTest, DeterministicBackwardIsBitwiseRepeatable) {
  testing::TracedRng rng;
  // Few keys, many positions: every row sums hundreds of terms, so any
  // change of order would show in the low bits.
  Build(Case{4096, 39, 64, 39, 16}, &rng);
  std::vector<float> first;
  for (int run = 0; run < 3; ++run) {
    DeviceArray<float> grad = Make<float>(batch_.unique.size() * dim_);
    if (run == 1) {  // disturb the scratch and the caches in between
      ASSERT_TRUE(EmbeddingPoolBackward(gpu_, DeviceView(), d_grad_out_.span(),
                                        dim_, Pooling::kMean, false,
                                        grad.span())
                      .ok());
    }
    ASSERT_TRUE(EmbeddingPoolBackward(gpu_, DeviceView(), d_grad_out_.span(),
                                      dim_, Pooling::kMean, true, grad.span())
                    .ok());
    std::vector<float> got = Download(grad);
    if (run == 0) {
      first = got;
    } else {
      ASSERT_TRUE(testing::SameBits(first, got)) << "run " << run << " differs";
    }
  }
}

}  // namespace
}  // namespace petrel
