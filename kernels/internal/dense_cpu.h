// The CPU halves of kernels/dense.h, called by its dispatchers after they
// have checked every span's size against the shapes.
#ifndef PETREL_KERNELS_INTERNAL_DENSE_CPU_H_
#define PETREL_KERNELS_INTERNAL_DENSE_CPU_H_

#include <cstddef>

#include "absl/types/span.h"

namespace petrel {
namespace internal {

// GemmCpu runs the fastest kernel this CPU has; tests run each of them.
enum class GemmKernel {
  kPortable,  // GCC vector extensions (AVX2 + FMA clone on x86-64 GCC)
  kAvx512,    // x86-64 GCC/Clang builds on CPUs with AVX-512 F/BW/DQ/VL
};
bool GemmKernelAvailable(GemmKernel kernel);

void GemmCpu(bool trans_a, bool trans_b, size_t m, size_t n, size_t k,
             float alpha, absl::Span<const float> a, absl::Span<const float> b,
             float beta, absl::Span<float> c);
// GemmCpu through `kernel`, which must be available.
void GemmCpuWith(GemmKernel kernel, bool trans_a, bool trans_b, size_t m,
                 size_t n, size_t k, float alpha, absl::Span<const float> a,
                 absl::Span<const float> b, float beta, absl::Span<float> c);
void AddBiasCpu(size_t rows, size_t cols, absl::Span<const float> bias,
                absl::Span<float> y);
void BiasGradCpu(size_t rows, size_t cols, absl::Span<const float> dy,
                 absl::Span<float> dbias);
void ReluCpu(absl::Span<float> y);
void ReluBackwardCpu(absl::Span<const float> y, absl::Span<float> dy);

}  // namespace internal
}  // namespace petrel

#endif  // PETREL_KERNELS_INTERNAL_DENSE_CPU_H_
