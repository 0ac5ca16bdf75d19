// Dense layers on CUDA (kernels/dense.h): GEMM through cuBLAS, bias and
// ReLU as element-wise kernels, the bias gradient as a column reduction.
//
// cuBLAS is column-major; a row-major matrix is its column-major transpose,
// so the row-major C = op(A) op(B) is computed as the column-major
// C^T = op(B)^T op(A)^T: cublasSgemm with A and B swapped and m and n
// swapped. cuBLAS runs in its default math mode (full float32; no TF32).
#include <climits>
#include <cstddef>

#include "absl/strings/str_cat.h"

#include "kernels/cuda_status.h"
#include "kernels/internal/cuda_ops.h"

namespace petrel {
namespace internal {
namespace {

constexpr unsigned kBlock = 256;

__global__ void AddBiasKernel(size_t rows, size_t cols, const float* bias,
                              float* y) {
  const size_t n = rows * cols;
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x) {
    y[i] += bias[i % cols];
  }
}

// A block of 32 x 8 threads reduces 32 columns: each thread row sums every
// 8th row (so loads are coalesced along the columns), then thread row 0
// adds the 8 partial sums in order. The result does not depend on timing.
constexpr unsigned kBiasCols = 32;
constexpr unsigned kBiasRows = 8;

__global__ void BiasGradKernel(size_t rows, size_t cols, const float* dy,
                               float* dbias) {
  __shared__ float partial[kBiasRows][kBiasCols + 1];
  for (size_t c0 = size_t{blockIdx.x} * kBiasCols; c0 < cols;
       c0 += size_t{gridDim.x} * kBiasCols) {
    const size_t c = c0 + threadIdx.x;
    float sum = 0.0f;
    if (c < cols) {
      for (size_t r = threadIdx.y; r < rows; r += kBiasRows) {
        sum += dy[r * cols + c];
      }
    }
    partial[threadIdx.y][threadIdx.x] = sum;
    __syncthreads();
    if (threadIdx.y == 0 && c < cols) {
      float total = 0.0f;
      for (unsigned k = 0; k < kBiasRows; ++k) total += partial[k][threadIdx.x];
      dbias[c] = total;
    }
    __syncthreads();  // before the next column group overwrites partial
  }
}

__global__ void ScaleKernel(size_t n, float beta, float* c) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x) {
    c[i] = beta == 0.0f ? 0.0f : beta * c[i];
  }
}

__global__ void ReluKernel(size_t n, float* y) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x) {
    y[i] = fmaxf(y[i], 0.0f);
  }
}

__global__ void ReluBackwardKernel(size_t n, const float* y, float* dy) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x) {
    if (y[i] <= 0.0f) dy[i] = 0.0f;
  }
}

}  // namespace

absl::Status GemmCuda(const Device& device, bool trans_a, bool trans_b,
                      size_t m, size_t n, size_t k, float alpha,
                      absl::Span<const float> a, absl::Span<const float> b,
                      float beta, absl::Span<float> c) {
  if (m == 0 || n == 0) return absl::OkStatus();
  if (m > INT_MAX || n > INT_MAX || k > INT_MAX) {
    return absl::InvalidArgumentError(
        absl::StrCat("Gemm on CUDA: dimensions ", m, "x", n, "x", k,
                     " exceed cuBLAS's int range"));
  }
  if (k == 0) {  // C = beta * C without relying on cuBLAS's k == 0 case
    ScaleKernel<<<GridFor(m * n, kBlock), kBlock, 0, StreamOf(device)>>>(
        m * n, beta, c.data());
    PETREL_CUDA_RETURN_IF_LAUNCH_ERROR("ScaleKernel");
    return absl::OkStatus();
  }
  const int mi = static_cast<int>(m);
  const int ni = static_cast<int>(n);
  const int ki = static_cast<int>(k);
  // Leading dimensions of the row-major storage (all > 0 here).
  const int lda = trans_a ? mi : ki;
  const int ldb = trans_b ? ki : ni;
  PETREL_CUDA_RETURN_IF_ERROR(
      cublasSgemm(BlasOf(device), trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                  trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, ni, mi, ki, &alpha,
                  b.data(), ldb, a.data(), lda, &beta, c.data(), ni));
  return absl::OkStatus();
}

absl::Status AddBiasCuda(const Device& device, size_t rows, size_t cols,
                         absl::Span<const float> bias, absl::Span<float> y) {
  const size_t n = rows * cols;
  if (n == 0) return absl::OkStatus();
  AddBiasKernel<<<GridFor(n, kBlock), kBlock, 0, StreamOf(device)>>>(
      rows, cols, bias.data(), y.data());
  PETREL_CUDA_RETURN_IF_LAUNCH_ERROR("AddBiasKernel");
  return absl::OkStatus();
}

absl::Status BiasGradCuda(const Device& device, size_t rows, size_t cols,
                          absl::Span<const float> dy, absl::Span<float> dbias) {
  if (cols == 0) return absl::OkStatus();
  const unsigned grid = GridFor(cols, kBiasCols);
  BiasGradKernel<<<grid, dim3(kBiasCols, kBiasRows, 1), 0, StreamOf(device)>>>(
      rows, cols, dy.data(), dbias.data());
  PETREL_CUDA_RETURN_IF_LAUNCH_ERROR("BiasGradKernel");
  return absl::OkStatus();
}

absl::Status ReluCuda(const Device& device, absl::Span<float> y) {
  if (y.empty()) return absl::OkStatus();
  ReluKernel<<<GridFor(y.size(), kBlock), kBlock, 0, StreamOf(device)>>>(
      y.size(), y.data());
  PETREL_CUDA_RETURN_IF_LAUNCH_ERROR("ReluKernel");
  return absl::OkStatus();
}

absl::Status ReluBackwardCuda(const Device& device, absl::Span<const float> y,
                              absl::Span<float> dy) {
  if (y.empty()) return absl::OkStatus();
  ReluBackwardKernel<<<GridFor(y.size(), kBlock), kBlock, 0,
                       StreamOf(device)>>>(y.size(), y.data(), dy.data());
  PETREL_CUDA_RETURN_IF_LAUNCH_ERROR("ReluBackwardKernel");
  return absl::OkStatus();
}

}  // namespace internal
}  // namespace petrel
