// CPU dense kernels. Gemm follows the BLIS/GotoBLAS structure: op(B) is
// packed into panels of kNr columns and op(A) into panels of kMr rows (the
// transposes are absorbed by the packing), and a kMr x kNr micro-kernel
// accumulates one tile of C in registers over a kKc-deep slice. Block sizes
// keep a packed B micro-panel (kKc x kNr) in L1 and the packed A block
// (kMc x kKc) in L2. On x86-64 GCC the macro-kernel is compiled twice
// (target_clones): for x86-64-v3 (AVX2 + FMA) and for the baseline, picked
// at load time. CPUs with AVX-512 take gemm_avx512_cpu.cc instead. beta is
// applied when the first k-slice is stored (beta == 0 never reads C).
// Figures in dense_benchmark.cc.
#include "kernels/internal/dense_cpu.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "glog/logging.h"

#include "kernels/internal/gemm_avx512_cpu.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define PETREL_GEMM_CLONES \
  __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define PETREL_GEMM_CLONES
#endif

namespace petrel {
namespace internal {
namespace {

constexpr size_t kMr = 6;
constexpr size_t kNr = 16;
constexpr size_t kKc = 256;
constexpr size_t kMc = 72;  // multiple of kMr
constexpr size_t kNc = 1024;

// 8 floats; the default clone lowers it to two SSE registers.
typedef float V8 __attribute__((vector_size(32)));

// op(A)[i0 .. i0+mc) x [p0 .. p0+kc) into panels of kMr rows, each stored
// k-major (ap[p * kMr + r]); rows past mc are zero.
void PackA(bool trans, const float* a, size_t m, size_t k, size_t i0, size_t mc,
           size_t p0, size_t kc, float* ap) {
  for (size_t ir = 0; ir < mc; ir += kMr, ap += kc * kMr) {
    const size_t rows = std::min(kMr, mc - ir);
    if (rows < kMr) std::fill(ap, ap + kc * kMr, 0.0f);
    if (trans) {  // op(A)(i, p) = a[p * m + i]
      for (size_t p = 0; p < kc; ++p) {
        const float* src = a + (p0 + p) * m + i0 + ir;
        for (size_t r = 0; r < rows; ++r) ap[p * kMr + r] = src[r];
      }
    } else {  // op(A)(i, p) = a[i * k + p]
      for (size_t r = 0; r < rows; ++r) {
        const float* src = a + (i0 + ir + r) * k + p0;
        for (size_t p = 0; p < kc; ++p) ap[p * kMr + r] = src[p];
      }
    }
  }
}

// op(B)[p0 .. p0+kc) x [j0 .. j0+nc) into panels of kNr columns, each
// stored k-major (bp[p * kNr + c]); columns past nc are zero.
void PackB(bool trans, const float* b, size_t n, size_t k, size_t p0, size_t kc,
           size_t j0, size_t nc, float* bp) {
  for (size_t jr = 0; jr < nc; jr += kNr, bp += kc * kNr) {
    const size_t cols = std::min(kNr, nc - jr);
    if (cols < kNr) std::fill(bp, bp + kc * kNr, 0.0f);
    if (trans) {  // op(B)(p, j) = b[j * k + p]
      for (size_t c = 0; c < cols; ++c) {
        const float* src = b + (j0 + jr + c) * k + p0;
        for (size_t p = 0; p < kc; ++p) bp[p * kNr + c] = src[p];
      }
    } else {  // op(B)(p, j) = b[p * n + j]
      for (size_t p = 0; p < kc; ++p) {
        std::memcpy(bp + p * kNr, b + (p0 + p) * n + j0 + jr,
                    cols * sizeof(float));
      }
    }
  }
}

// C[mc x nc] (row stride ldc) = alpha * Ap Bp + beta * C over a kc-deep
// slice; beta == 0 never reads C.
PETREL_GEMM_CLONES
void MacroKernel(size_t mc, size_t nc, size_t kc, const float* ap_block,
                 const float* bp_block, float alpha, float beta, float* c,
                 size_t ldc) {
  for (size_t jr = 0; jr < nc; jr += kNr) {
    const float* bp_panel = bp_block + (jr / kNr) * kc * kNr;
    const size_t cols = std::min(kNr, nc - jr);
    for (size_t ir = 0; ir < mc; ir += kMr) {
      const float* ap = ap_block + (ir / kMr) * kc * kMr;
      const float* bp = bp_panel;
      V8 acc[kMr][2] = {};
      for (size_t p = 0; p < kc; ++p, ap += kMr, bp += kNr) {
        V8 b0, b1;
        std::memcpy(&b0, bp, sizeof(V8));
        std::memcpy(&b1, bp + 8, sizeof(V8));
        for (size_t r = 0; r < kMr; ++r) {
          const V8 a = V8{} + ap[r];
          acc[r][0] += a * b0;
          acc[r][1] += a * b1;
        }
      }
      const size_t rows = std::min(kMr, mc - ir);
      float tile[kMr][kNr];
      std::memcpy(tile, acc, sizeof(tile));
      for (size_t r = 0; r < rows; ++r) {
        float* dst = c + (ir + r) * ldc + jr;
        if (beta == 0.0f) {
          for (size_t q = 0; q < cols; ++q) dst[q] = alpha * tile[r][q];
        } else if (beta == 1.0f) {
          for (size_t q = 0; q < cols; ++q) dst[q] += alpha * tile[r][q];
        } else {
          for (size_t q = 0; q < cols; ++q) {
            dst[q] = alpha * tile[r][q] + beta * dst[q];
          }
        }
      }
    }
  }
}

// Packing buffers, reused across calls (one set per thread).
struct Buffers {
  std::vector<float> a, b;
};

// The portable path; m, n, k > 0 and alpha != 0.
void GemmPortable(bool trans_a, bool trans_b, size_t m, size_t n, size_t k,
                  float alpha, const float* a, const float* b, float beta,
                  float* c) {
  thread_local Buffers buffers;
  buffers.a.resize(kMc * kKc);
  buffers.b.resize(std::min(kNc, (n + kNr - 1) / kNr * kNr) * kKc);
  for (size_t j0 = 0; j0 < n; j0 += kNc) {
    const size_t nc = std::min(kNc, n - j0);
    for (size_t p0 = 0; p0 < k; p0 += kKc) {
      const size_t kc = std::min(kKc, k - p0);
      const float slice_beta = p0 == 0 ? beta : 1.0f;
      PackB(trans_b, b, n, k, p0, kc, j0, nc, buffers.b.data());
      for (size_t i0 = 0; i0 < m; i0 += kMc) {
        const size_t mc = std::min(kMc, m - i0);
        PackA(trans_a, a, m, k, i0, mc, p0, kc, buffers.a.data());
        MacroKernel(mc, nc, kc, buffers.a.data(), buffers.b.data(), alpha,
                    slice_beta, c + i0 * n + j0, n);
      }
    }
  }
}

}  // namespace

bool GemmKernelAvailable(GemmKernel kernel) {
  switch (kernel) {
    case GemmKernel::kPortable:
      return true;
    case GemmKernel::kAvx512:
      return Avx512GemmAvailable();
  }
  return false;
}

void GemmCpu(bool trans_a, bool trans_b, size_t m, size_t n, size_t k,
             float alpha, absl::Span<const float> a, absl::Span<const float> b,
             float beta, absl::Span<float> c) {
  const GemmKernel kernel =
      Avx512GemmAvailable() ? GemmKernel::kAvx512 : GemmKernel::kPortable;
  GemmCpuWith(kernel, trans_a, trans_b, m, n, k, alpha, a, b, beta, c);
}

void GemmCpuWith(GemmKernel kernel, bool trans_a, bool trans_b, size_t m,
                 size_t n, size_t k, float alpha, absl::Span<const float> a,
                 absl::Span<const float> b, float beta, absl::Span<float> c) {
  CHECK(GemmKernelAvailable(kernel));
  if (m == 0 || n == 0) return;
  if (k == 0 || alpha == 0.0f) {  // c = beta * c
    if (beta == 0.0f) {
      std::fill(c.begin(), c.end(), 0.0f);
    } else if (beta != 1.0f) {
      for (float& x : c) x *= beta;
    }
    return;
  }
  if (kernel == GemmKernel::kAvx512) {
    GemmAvx512(trans_a, trans_b, m, n, k, alpha, a.data(), b.data(), beta,
               c.data());
  } else {
    GemmPortable(trans_a, trans_b, m, n, k, alpha, a.data(), b.data(), beta,
                 c.data());
  }
}

void AddBiasCpu(size_t rows, size_t cols, absl::Span<const float> bias,
                absl::Span<float> y) {
  const float* __restrict b = bias.data();
  for (size_t r = 0; r < rows; ++r) {
    float* __restrict row = y.data() + r * cols;
    for (size_t q = 0; q < cols; ++q) row[q] += b[q];
  }
}

void BiasGradCpu(size_t rows, size_t cols, absl::Span<const float> dy,
                 absl::Span<float> dbias) {
  float* __restrict db = dbias.data();
  std::fill(db, db + cols, 0.0f);
  for (size_t r = 0; r < rows; ++r) {
    const float* __restrict row = dy.data() + r * cols;
    for (size_t q = 0; q < cols; ++q) db[q] += row[q];
  }
}

void ReluCpu(absl::Span<float> y) {
  for (float& x : y) x = x > 0.0f ? x : 0.0f;
}

void ReluBackwardCpu(absl::Span<const float> y, absl::Span<float> dy) {
  const float* __restrict out = y.data();
  float* __restrict d = dy.data();
  for (size_t i = 0; i < dy.size(); ++i) d[i] = out[i] > 0.0f ? d[i] : 0.0f;
}

}  // namespace internal
}  // namespace petrel
