// AVX-512 GEMM (kernels/internal/gemm_avx512_cpu.h), the BLIS structure of
// the portable path in dense_cpu.cc with a 12 x 32 micro-tile: 24 zmm
// accumulators, two vectors of B and one broadcast of A per step of k.
// op(B) is packed into panels of kNr columns; op(A) is read where it lies
// (both layouts give the micro-kernel its kMr rows at a fixed stride), except
// a last partial panel of rows, copied and zero-padded, so no row past m is
// ever read. beta is applied when the first k-slice is stored, so beta == 0
// writes C without reading it (no zero-fill pass, no NaN from old C).
// The functions carry a target attribute instead of the file being compiled
// with -mavx512f, so the rest of the library stays baseline x86-64 and
// GemmCpu picks this path at run time. Figures in dense_benchmark.cc.
#include "kernels/internal/gemm_avx512_cpu.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define PETREL_HAVE_AVX512_GEMM 1
#endif

#ifdef PETREL_HAVE_AVX512_GEMM
#include <algorithm>
#include <cstdint>
#include <vector>

#include <immintrin.h>
#else
#include "glog/logging.h"
#endif

namespace petrel {
namespace internal {

#ifdef PETREL_HAVE_AVX512_GEMM
#define PETREL_AVX512 \
  __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl")))

namespace {

constexpr size_t kMr = 12;
constexpr size_t kNr = 32;
constexpr size_t kKc = 256;   // a packed B micro-panel (32 KiB) stays in L1
constexpr size_t kMc = 144;   // rows of A per block (multiple of kMr), in L2
constexpr size_t kNc = 1024;  // columns of packed B per block
constexpr size_t kAlignFloats = 16;  // 64-byte alignment of the buffers

float* Aligned(std::vector<float>* buffer, size_t floats) {
  buffer->resize(floats + kAlignFloats);
  const auto address = reinterpret_cast<uintptr_t>(buffer->data());
  const size_t skip = (64 - address % 64) % 64 / sizeof(float);
  return buffer->data() + skip;
}

// Lanes [0, count) of a 16-lane vector, count clamped to [0, 16].
inline __mmask16 LaneMask(size_t count) {
  if (count >= 16) return 0xFFFF;
  return static_cast<__mmask16>((1u << count) - 1);
}

// dst[lanes of mask] = alpha * acc + beta * dst; beta == 0 never reads dst.
PETREL_AVX512 inline void StoreVector(float* dst, __mmask16 mask, __m512 acc,
                                      __m512 alpha, float beta) {
  __m512 v = _mm512_mul_ps(acc, alpha);
  if (beta != 0.0f) {
    v = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mask, dst), _mm512_set1_ps(beta),
                        v);
  }
  _mm512_mask_storeu_ps(dst, mask, v);
}

// C[rows x cols] (row stride ldc) = alpha * A Bp + beta * C over a kc-deep
// slice, rows <= kMr and cols <= kNr. A has kMr readable rows: A(r, p) is
// a[p * lda + r] when kKMajor, else a[r * lda + p]. bp is a packed panel
// (bp[p * kNr + q], 64-byte aligned).
template <bool kKMajor>
PETREL_AVX512 void MicroKernel(size_t kc, const float* a, size_t lda,
                               const float* bp, float alpha, float beta,
                               float* c, size_t ldc, size_t rows, size_t cols) {
  __m512 acc[kMr][2];
  for (size_t r = 0; r < kMr; ++r) {
    acc[r][0] = _mm512_setzero_ps();
    acc[r][1] = _mm512_setzero_ps();
  }
  for (size_t p = 0; p < kc; ++p, bp += kNr, a += kKMajor ? lda : 1) {
    const __m512 b0 = _mm512_load_ps(bp);
    const __m512 b1 = _mm512_load_ps(bp + 16);
    for (size_t r = 0; r < kMr; ++r) {
      const __m512 av = _mm512_set1_ps(kKMajor ? a[r] : a[r * lda]);
      acc[r][0] = _mm512_fmadd_ps(av, b0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(av, b1, acc[r][1]);
    }
  }
  const __mmask16 mask0 = LaneMask(cols);
  const __mmask16 mask1 = cols > 16 ? LaneMask(cols - 16) : 0;
  const __m512 va = _mm512_set1_ps(alpha);
  for (size_t r = 0; r < kMr; ++r) {
    if (r >= rows) break;
    StoreVector(c + r * ldc, mask0, acc[r][0], va, beta);
    if (mask1 != 0) StoreVector(c + r * ldc + 16, mask1, acc[r][1], va, beta);
  }
}

// op(B)[p0 .. p0+kc) x [j0 .. j0+nc) into panels of kNr columns, each
// stored k-major (bp[p * kNr + q]); columns past nc are zero.
PETREL_AVX512 void PackB(bool trans, const float* b, size_t n, size_t k,
                         size_t p0, size_t kc, size_t j0, size_t nc,
                         float* bp) {
  for (size_t jr = 0; jr < nc; jr += kNr, bp += kc * kNr) {
    const size_t cols = std::min(kNr, nc - jr);
    if (trans) {  // op(B)(p, j) = b[j * k + p]
      if (cols < kNr) std::fill(bp, bp + kc * kNr, 0.0f);
      for (size_t q = 0; q < cols; ++q) {
        const float* src = b + (j0 + jr + q) * k + p0;
        for (size_t p = 0; p < kc; ++p) bp[p * kNr + q] = src[p];
      }
    } else {  // op(B)(p, j) = b[p * n + j]
      const __mmask16 mask0 = LaneMask(cols);
      const __mmask16 mask1 = cols > 16 ? LaneMask(cols - 16) : 0;
      for (size_t p = 0; p < kc; ++p) {
        const float* src = b + (p0 + p) * n + j0 + jr;
        _mm512_store_ps(bp + p * kNr, _mm512_maskz_loadu_ps(mask0, src));
        _mm512_store_ps(bp + p * kNr + 16,
                        mask1 != 0 ? _mm512_maskz_loadu_ps(mask1, src + 16)
                                   : _mm512_setzero_ps());
      }
    }
  }
}

// Rows [i, i + rows) of op(A), columns [p0, p0 + kc), into ap[p * kMr + r]
// with rows past `rows` zero.
void PackPartialA(bool trans, const float* a, size_t m, size_t k, size_t i,
                  size_t rows, size_t p0, size_t kc, float* ap) {
  std::fill(ap, ap + kc * kMr, 0.0f);
  for (size_t r = 0; r < rows; ++r) {
    for (size_t p = 0; p < kc; ++p) {
      ap[p * kMr + r] =
          trans ? a[(p0 + p) * m + i + r] : a[(i + r) * k + p0 + p];
    }
  }
}

// Packing buffers, reused across calls (one set per thread).
struct Buffers {
  std::vector<float> a, b;
};

}  // namespace

bool Avx512GemmAvailable() {
  return __builtin_cpu_supports("avx512f") &&
         __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512vl");
}

void GemmAvx512(bool trans_a, bool trans_b, size_t m, size_t n, size_t k,
                float alpha, const float* a, const float* b, float beta,
                float* c) {
  thread_local Buffers buffers;
  float* bp_block = Aligned(
      &buffers.b, std::min(kNc, (n + kNr - 1) / kNr * kNr) * std::min(kKc, k));
  float* edge = Aligned(&buffers.a, kMr * std::min(kKc, k));
  for (size_t j0 = 0; j0 < n; j0 += kNc) {
    const size_t nc = std::min(kNc, n - j0);
    for (size_t p0 = 0; p0 < k; p0 += kKc) {
      const size_t kc = std::min(kKc, k - p0);
      const float slice_beta = p0 == 0 ? beta : 1.0f;
      PackB(trans_b, b, n, k, p0, kc, j0, nc, bp_block);
      for (size_t i0 = 0; i0 < m; i0 += kMc) {
        const size_t mc = std::min(kMc, m - i0);
        const size_t tail = mc % kMr;
        if (tail != 0) {
          PackPartialA(trans_a, a, m, k, i0 + mc - tail, tail, p0, kc, edge);
        }
        for (size_t jr = 0; jr < nc; jr += kNr) {
          const float* bp = bp_block + jr * kc;
          const size_t cols = std::min(kNr, nc - jr);
          for (size_t ir = 0; ir < mc; ir += kMr) {
            const size_t i = i0 + ir;
            const size_t rows = std::min(kMr, mc - ir);
            float* cc = c + i * n + j0 + jr;
            if (rows < kMr) {
              MicroKernel<true>(kc, edge, kMr, bp, alpha, slice_beta, cc, n,
                                rows, cols);
            } else if (trans_a) {  // op(A)(i, p) = a[p * m + i]
              MicroKernel<true>(kc, a + p0 * m + i, m, bp, alpha, slice_beta,
                                cc, n, rows, cols);
            } else {  // op(A)(i, p) = a[i * k + p]
              MicroKernel<false>(kc, a + i * k + p0, k, bp, alpha, slice_beta,
                                 cc, n, rows, cols);
            }
          }
        }
      }
    }
  }
}

#else  // !PETREL_HAVE_AVX512_GEMM

bool Avx512GemmAvailable() { return false; }

void GemmAvx512(bool, bool, size_t, size_t, size_t, float, const float*,
                const float*, float, float*) {
  LOG(FATAL) << "this build has no AVX-512 GEMM; check Avx512GemmAvailable()";
}

#endif  // PETREL_HAVE_AVX512_GEMM

}  // namespace internal
}  // namespace petrel
