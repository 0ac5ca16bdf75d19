// CPU embedding pooling. The loops take the dim as a template argument D
// for the common dims, so the per-row loops have a constant trip count and
// vectorize (this file is compiled with -O3, see CMakeLists.txt); D == 0
// reads the dim at run time. AxpyRow copies the source row to the stack
// first: GCC's SLP vectorizer does not vectorize dst += x * src when the
// two may alias (__restrict is not enough), and the scalar loop was 2x
// slower. Measured in embedding_benchmark.cc.
#include "kernels/internal/embedding_cpu.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/internal/field_batch_raw.h"

namespace petrel {
namespace internal {
namespace {

using Batch = FieldBatchRaw;

// counts[f] = positions of example i in field f (counts is all zeros on
// entry; ClearCounts resets the entries the example touched).
void CountFields(const Batch& b, size_t i, uint32_t* counts) {
  for (uint32_t j = b.offsets[i]; j < b.offsets[i + 1]; ++j)
    ++counts[b.fields[j]];
}
void ClearCounts(const Batch& b, size_t i, uint32_t* counts) {
  for (uint32_t j = b.offsets[i]; j < b.offsets[i + 1]; ++j)
    counts[b.fields[j]] = 0;
}

// dst[0..d) += x * src[0..d).
template <size_t D>
inline void AxpyRow(float x, const float* src, size_t d, float* dst) {
  if constexpr (D != 0) {
    float row[D];
    std::memcpy(row, src, sizeof(row));
    for (size_t c = 0; c < D; ++c) dst[c] += x * row[c];
  } else {
    for (size_t c = 0; c < d; ++c) dst[c] += x * src[c];
  }
}

template <size_t D>
void Forward(const Batch& b, const float* rows, size_t dim, bool mean,
             uint32_t* counts, float* out) {
  const size_t d = D != 0 ? D : dim;
  const size_t stride = b.num_fields * d;
  for (size_t i = 0; i < b.examples; ++i) {
    float* o = out + i * stride;
    std::fill(o, o + stride, 0.0f);
    for (uint32_t j = b.offsets[i]; j < b.offsets[i + 1]; ++j) {
      AxpyRow<D>(b.values[j], rows + size_t{b.inverse[j]} * d, d,
                 o + size_t{b.fields[j]} * d);
    }
    if (!mean) continue;
    CountFields(b, i, counts);
    for (uint32_t j = b.offsets[i]; j < b.offsets[i + 1]; ++j) {
      const uint32_t f = b.fields[j];
      if (counts[f] > 1) {
        const float count = static_cast<float>(counts[f]);
        float* dst = o + size_t{f} * d;
        for (size_t c = 0; c < d; ++c) dst[c] /= count;
      }
      counts[f] = 0;  // divide each field once
    }
  }
}

template <size_t D>
void Backward(const Batch& b, const float* grad_out, size_t dim, bool mean,
              uint32_t* counts, float* grad_rows) {
  const size_t d = D != 0 ? D : dim;
  const size_t stride = b.num_fields * d;
  for (size_t i = 0; i < b.examples; ++i) {
    const float* g = grad_out + i * stride;
    if (mean) CountFields(b, i, counts);
    for (uint32_t j = b.offsets[i]; j < b.offsets[i + 1]; ++j) {
      const uint32_t f = b.fields[j];
      const float x =
          mean ? b.values[j] / static_cast<float>(counts[f]) : b.values[j];
      AxpyRow<D>(x, g + size_t{f} * d, d, grad_rows + size_t{b.inverse[j]} * d);
    }
    if (mean) ClearCounts(b, i, counts);
  }
}

template <template <size_t> class Op, typename... Args>
void ByDim(size_t dim, Args&&... args) {
  switch (dim) {
    case 4:
      return Op<4>::Run(dim, args...);
    case 8:
      return Op<8>::Run(dim, args...);
    case 16:
      return Op<16>::Run(dim, args...);
    case 32:
      return Op<32>::Run(dim, args...);
    case 64:
      return Op<64>::Run(dim, args...);
    default:
      return Op<0>::Run(dim, args...);
  }
}

template <size_t D>
struct ForwardOp {
  static void Run(size_t dim, const Batch& b, const float* rows, bool mean,
                  uint32_t* counts, float* out) {
    Forward<D>(b, rows, dim, mean, counts, out);
  }
};
template <size_t D>
struct BackwardOp {
  static void Run(size_t dim, const Batch& b, const float* grad_out, bool mean,
                  uint32_t* counts, float* grad_rows) {
    Backward<D>(b, grad_out, dim, mean, counts, grad_rows);
  }
};

}  // namespace

void EmbeddingPoolForwardCpu(const FieldBatchView& batch,
                             absl::Span<const float> rows, size_t dim,
                             Pooling pooling, absl::Span<float> out) {
  const bool mean = pooling == Pooling::kMean;
  std::vector<uint32_t> counts(mean ? batch.num_fields : 0, 0);
  ByDim<ForwardOp>(dim, RawOf(batch), rows.data(), mean, counts.data(),
                   out.data());
}

void EmbeddingPoolBackwardCpu(const FieldBatchView& batch,
                              absl::Span<const float> grad_out, size_t dim,
                              Pooling pooling, absl::Span<float> grad_rows) {
  const bool mean = pooling == Pooling::kMean;
  std::fill(grad_rows.begin(), grad_rows.end(), 0.0f);
  std::vector<uint32_t> counts(mean ? batch.num_fields : 0, 0);
  ByDim<BackwardOp>(dim, RawOf(batch), grad_out.data(), mean, counts.data(),
                    grad_rows.data());
}

}  // namespace internal
}  // namespace petrel
