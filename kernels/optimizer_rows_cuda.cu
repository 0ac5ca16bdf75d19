// Optimizer row updates on CUDA (kernels/optimizer_rows.h): element-wise
// kernels over the formulas of kernels/optimizer_formulas.h (which the
// servers' optimizers and the CPU versions call too).
// Adam reads each row's step count in one kernel and increments it in a
// second, so no thread reads a count another thread has already bumped.
#include <cstddef>

#include "kernels/cuda_status.h"
#include "kernels/internal/cuda_ops.h"
#include "kernels/optimizer_formulas.h"

namespace petrel {
namespace internal {
namespace {

constexpr unsigned kBlock = 256;

__global__ void AdagradKernel(AdagradRowParams p, size_t n, float* w,
                              float* acc, const float* g) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x) {
    w[i] = AdagradStep(p, w[i], g[i], acc[i]);
  }
}

// Uses t = steps[row] + 1; AdamStepKernel stores it afterwards.
__global__ void AdamKernel(AdamRowParams p, size_t dim, size_t n, float* w,
                           float* m, float* v, const float* steps,
                           const float* g) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x) {
    const float t = steps[i / dim] + 1.0f;
    const float c1 = AdamCorrection(p.beta1, t);
    const float c2 = AdamCorrection(p.beta2, t);
    w[i] = AdamStep(p, c1, c2, w[i], g[i], m[i], v[i]);
  }
}

__global__ void AdamStepKernel(size_t rows, float* steps) {
  for (size_t r = blockIdx.x * size_t{blockDim.x} + threadIdx.x; r < rows;
       r += size_t{gridDim.x} * blockDim.x) {
    steps[r] += 1.0f;
  }
}

__global__ void FtrlKernel(FtrlRowParams p, size_t n, float* w, float* z,
                           float* nn, const float* g) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x) {
    w[i] = FtrlStep(p, w[i], g[i], z[i], nn[i]);
  }
}

}  // namespace

absl::Status AdagradRowUpdateCuda(const Device& device,
                                  const AdagradRowParams& params,
                                  absl::Span<float> w, absl::Span<float> acc,
                                  absl::Span<const float> g) {
  const size_t n = w.size();
  if (n == 0) return absl::OkStatus();
  AdagradKernel<<<GridFor(n, kBlock), kBlock, 0, StreamOf(device)>>>(
      params, n, w.data(), acc.data(), g.data());
  PETREL_CUDA_RETURN_IF_LAUNCH_ERROR("AdagradKernel");
  return absl::OkStatus();
}

absl::Status AdamRowUpdateCuda(const Device& device,
                               const AdamRowParams& params, size_t dim,
                               absl::Span<float> w, absl::Span<float> m,
                               absl::Span<float> v, absl::Span<float> steps,
                               absl::Span<const float> g) {
  const size_t n = w.size();
  if (n == 0 || dim == 0) return absl::OkStatus();
  cudaStream_t stream = StreamOf(device);
  AdamKernel<<<GridFor(n, kBlock), kBlock, 0, stream>>>(
      params, dim, n, w.data(), m.data(), v.data(), steps.data(), g.data());
  PETREL_CUDA_RETURN_IF_LAUNCH_ERROR("AdamKernel");
  AdamStepKernel<<<GridFor(steps.size(), kBlock), kBlock, 0, stream>>>(
      steps.size(), steps.data());
  PETREL_CUDA_RETURN_IF_LAUNCH_ERROR("AdamStepKernel");
  return absl::OkStatus();
}

absl::Status FtrlRowUpdateCuda(const Device& device,
                               const FtrlRowParams& params, absl::Span<float> w,
                               absl::Span<float> z, absl::Span<float> n,
                               absl::Span<const float> g) {
  const size_t size = w.size();
  if (size == 0) return absl::OkStatus();
  FtrlKernel<<<GridFor(size, kBlock), kBlock, 0, StreamOf(device)>>>(
      params, size, w.data(), z.data(), n.data(), g.data());
  PETREL_CUDA_RETURN_IF_LAUNCH_ERROR("FtrlKernel");
  return absl::OkStatus();
}

}  // namespace internal
}  // namespace petrel
