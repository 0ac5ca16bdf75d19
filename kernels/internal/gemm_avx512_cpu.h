// The AVX-512 GEMM behind internal::GemmCpu (kernels/internal/dense_cpu.h),
// built only by GCC or Clang for x86-64 and run only when the CPU has
// AVX-512 F/BW/DQ/VL; elsewhere Avx512GemmAvailable() is false.
#ifndef PETREL_KERNELS_INTERNAL_GEMM_AVX512_CPU_H_
#define PETREL_KERNELS_INTERNAL_GEMM_AVX512_CPU_H_

#include <cstddef>

namespace petrel {
namespace internal {

// True when this build has the kernel and this CPU (and OS) can run it.
bool Avx512GemmAvailable();

// c = alpha * op(a) * op(b) + beta * c with the layouts of petrel::Gemm.
// Requires Avx512GemmAvailable(), m, n, k > 0 and alpha != 0; beta == 0
// never reads c.
void GemmAvx512(bool trans_a, bool trans_b, size_t m, size_t n, size_t k,
                float alpha, const float* a, const float* b, float beta,
                float* c);

}  // namespace internal
}  // namespace petrel

#endif  // PETREL_KERNELS_INTERNAL_GEMM_AVX512_CPU_H_
