// Optimizer row updates on CUDA (kernels/optimizer_rows.h): element-wise
// kernels with the formulas of the header (and of server/optimizer.h).
// Adam reads each row's step count in one kernel and increments it in a
// second, so no thread reads a count another thread has already bumped.
#include <cstddef>

#include "kernels/cuda_status.h"
#include "kernels/internal/cuda_ops.h"

namespace petrel {
namespace internal {
namespace {

constexpr unsigned kBlock = 256;

__global__ void AdagradKernel(AdagradRowParams p, size_t n, float* w,
                              float* acc, const float* g) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x) {
    const float gi = g[i];
    const float a = acc[i] + gi * gi;
    acc[i] = a;
    w[i] -= p.learning_rate * gi / (sqrtf(a) + p.epsilon);
  }
}

// Uses t = steps[row] + 1; AdamStepKernel stores it afterwards.
__global__ void AdamKernel(AdamRowParams p, size_t dim, size_t n, float* w,
                           float* m, float* v, const float* steps,
                           const float* g) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x) {
    const float t = steps[i / dim] + 1.0f;
    const float gi = g[i];
    const float mi = p.beta1 * m[i] + (1.0f - p.beta1) * gi;
    const float vi = p.beta2 * v[i] + (1.0f - p.beta2) * gi * gi;
    m[i] = mi;
    v[i] = vi;
    // 1 - beta^t cancels (1 - 0.999^1 = 0.001): in double, so that powf's
    // few-ulp error is not amplified a thousandfold.
    const float c1 = static_cast<float>(1.0 - pow(double{p.beta1}, double{t}));
    const float c2 = static_cast<float>(1.0 - pow(double{p.beta2}, double{t}));
    const float m_hat = mi / c1;
    const float v_hat = vi / c2;
    w[i] -= p.learning_rate * m_hat / (sqrtf(v_hat) + p.epsilon);
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
    const float gi = g[i];
    const float n_old = nn[i];
    const float n_new = n_old + gi * gi;
    const float sigma = (sqrtf(n_new) - sqrtf(n_old)) / p.alpha;
    const float zi = z[i] + gi - sigma * w[i];
    z[i] = zi;
    nn[i] = n_new;
    if (fabsf(zi) <= p.l1) {
      w[i] = 0.0f;
    } else {
      const float sign = zi > 0.0f ? 1.0f : -1.0f;
      w[i] = -(zi - sign * p.l1) / ((p.beta + sqrtf(n_new)) / p.alpha + p.l2);
    }
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
