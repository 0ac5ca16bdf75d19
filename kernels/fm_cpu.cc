// The CPU factorization machine (kernels/internal/fm_cpu.h).
#include "kernels/internal/fm_cpu.h"

#include <algorithm>
#include <vector>

namespace petrel {
namespace internal {
namespace {

// The loops below take the factor dim as a template argument K for the
// common dims, so that the f loops have a constant trip count and GCC
// vectorizes them at -O2; K == 0 reads the dim at run time. __restrict
// tells the compiler that outputs and inputs do not overlap (they are
// distinct spans by contract).
// Sums one example's factor terms: s[f] = sum_j v[j,f] x_j and
// sq[f] = sum_j (v[j,f] x_j)^2, for f < k.
template <size_t K>
inline void SumFactors(const SparseBatchView& batch, const float* v, size_t k,
                       size_t i, float* __restrict s, float* __restrict sq) {
  if (K > 0) k = K;
  for (size_t f = 0; f < k; ++f) s[f] = sq[f] = 0.0f;
  for (uint32_t j = batch.offsets[i]; j < batch.offsets[i + 1]; ++j) {
    const float x = batch.values[j];
    const float* row = v + size_t{batch.inverse[j]} * k;
    for (size_t f = 0; f < k; ++f) {
      const float t = row[f] * x;
      s[f] += t;
      sq[f] += t * t;
    }
  }
}

template <size_t K>
void ForwardImpl(const SparseBatchView& batch, const FmParams& params,
                 float* __restrict logits, float* __restrict sum_vx) {
  const size_t k = K > 0 ? K : params.k;
  // For K > 0 the sums live on the stack, where the compiler can see that
  // they alias nothing and keep them in registers.
  constexpr size_t kLocal = K > 0 ? K : 1;
  float s_local[kLocal], sq_local[kLocal];
  std::vector<float> heap(K > 0 ? 0 : 2 * k);
  float* s = K > 0 ? s_local : heap.data();
  float* sq = K > 0 ? sq_local : heap.data() + k;
  for (size_t i = 0; i + 1 < batch.offsets.size(); ++i) {
    SumFactors<K>(batch, params.v.data(), k, i, s, sq);
    float linear = params.bias;
    for (uint32_t j = batch.offsets[i]; j < batch.offsets[i + 1]; ++j) {
      linear += params.w[batch.inverse[j]] * batch.values[j];
    }
    float pair = 0.0f;
    for (size_t f = 0; f < k; ++f) {
      pair += s[f] * s[f] - sq[f];
      sum_vx[i * k + f] = s[f];
    }
    logits[i] = linear + 0.5f * pair;
  }
}

template <size_t K>
float BackwardImpl(const SparseBatchView& batch, const FmParams& params,
                   const float* __restrict sum_vx,
                   const float* __restrict dlogits, float* __restrict grad_w,
                   float* __restrict grad_v) {
  const size_t k = K > 0 ? K : params.k;
  const uint32_t* offsets = batch.offsets.data();
  const uint32_t* inverse = batch.inverse.data();
  const float* values = batch.values.data();
  const float* __restrict v = params.v.data();
  double bias_sum = 0.0;
  for (size_t i = 0; i + 1 < batch.offsets.size(); ++i) {
    const float d = dlogits[i];
    const float* __restrict s = sum_vx + i * k;
    bias_sum += d;
    for (uint32_t j = offsets[i]; j < offsets[i + 1]; ++j) {
      const size_t u = inverse[j];
      const float x = values[j];
      const float dx = d * x;
      const float* __restrict row = v + u * k;
      float* __restrict grow = grad_v + u * k;
      grad_w[u] += dx;
      for (size_t f = 0; f < k; ++f) grow[f] += dx * (s[f] - row[f] * x);
    }
  }
  return static_cast<float>(bias_sum);
}

// Calls Fn<K> for the dims with a specialization, Fn<0> otherwise.
#define PETREL_FM_DISPATCH(k, Fn, ...) \
  switch (k) {                         \
    case 4:                            \
      return Fn<4>(__VA_ARGS__);       \
    case 8:                            \
      return Fn<8>(__VA_ARGS__);       \
    case 16:                           \
      return Fn<16>(__VA_ARGS__);      \
    case 32:                           \
      return Fn<32>(__VA_ARGS__);      \
    case 64:                           \
      return Fn<64>(__VA_ARGS__);      \
    default:                           \
      return Fn<0>(__VA_ARGS__);       \
  }

void Forward(const SparseBatchView& batch, const FmParams& params,
             float* logits, float* sum_vx) {
  PETREL_FM_DISPATCH(params.k, ForwardImpl, batch, params, logits, sum_vx);
}

float Backward(const SparseBatchView& batch, const FmParams& params,
               const float* sum_vx, const float* dlogits, float* grad_w,
               float* grad_v) {
  PETREL_FM_DISPATCH(params.k, BackwardImpl, batch, params, sum_vx, dlogits,
                     grad_w, grad_v);
}

#undef PETREL_FM_DISPATCH

}  // namespace

void FmForwardCpu(const SparseBatchView& batch, const FmParams& params,
                  absl::Span<float> logits, absl::Span<float> sum_vx) {
  Forward(batch, params, logits.data(), sum_vx.data());
}

float FmBackwardCpu(const SparseBatchView& batch, const FmParams& params,
                    absl::Span<const float> sum_vx,
                    absl::Span<const float> dlogits, absl::Span<float> grad_w,
                    absl::Span<float> grad_v) {
  std::fill(grad_w.begin(), grad_w.end(), 0.0f);
  std::fill(grad_v.begin(), grad_v.end(), 0.0f);
  return Backward(batch, params, sum_vx.data(), dlogits.data(), grad_w.data(),
                  grad_v.data());
}

}  // namespace internal
}  // namespace petrel
