// CUDA and cuBLAS return codes as absl::Status (STYLE.md §14): an
// out-of-memory is ResourceExhausted, every other failure Internal, each
// naming the call and the error. Also the small launch helpers the
// <op>_cuda.cu files share.
//
// Only files compiled with PETREL_HAVE_CUDA include this header (it includes
// the CUDA runtime and cuBLAS headers).
#ifndef PETREL_KERNELS_CUDA_STATUS_H_
#define PETREL_KERNELS_CUDA_STATUS_H_

#include <algorithm>
#include <cstddef>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

#include "kernels/cuda_context.h"
#include "kernels/device.h"

namespace petrel {
namespace internal {

// `call` is the text of the failed expression. A failed call also clears
// the runtime's last (non-sticky) error, so the next launch check does not
// report it again.
inline absl::Status CudaToStatus(cudaError_t err, const char* call) {
  if (err == cudaSuccess) return absl::OkStatus();
  (void)cudaGetLastError();
  std::string msg = absl::StrCat(call, ": ", cudaGetErrorName(err), " (",
                                 cudaGetErrorString(err), ")");
  if (err == cudaErrorMemoryAllocation) {
    return absl::ResourceExhaustedError(msg);
  }
  return absl::InternalError(msg);
}

inline absl::Status CudaToStatus(cublasStatus_t st, const char* call) {
  if (st == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  std::string msg = absl::StrCat(call, ": ", cublasGetStatusName(st), " (",
                                 cublasGetStatusString(st), ")");
  if (st == CUBLAS_STATUS_ALLOC_FAILED) {
    return absl::ResourceExhaustedError(msg);
  }
  return absl::InternalError(msg);
}

// The status of the last kernel launch (bad configuration, missing kernel
// image for this GPU, ...), naming the kernel.
inline absl::Status LaunchStatus(const char* kernel) {
  return CudaToStatus(cudaGetLastError(),
                      absl::StrCat("launch of ", kernel).c_str());
}

inline cudaStream_t StreamOf(const Device& device) {
  return static_cast<cudaStream_t>(device.cuda()->stream());
}

inline cublasHandle_t BlasOf(const Device& device) {
  return static_cast<cublasHandle_t>(device.cuda()->blas());
}

// Blocks for a grid-stride loop over n items: enough to fill a GPU, capped
// so that every kernel loops (the grid never exceeds gridDim.x's limits).
inline unsigned GridFor(size_t n, unsigned block) {
  constexpr size_t kMaxBlocks = 8192;
  const size_t blocks = (n + block - 1) / block;
  return static_cast<unsigned>(
      std::max<size_t>(1, std::min(blocks, kMaxBlocks)));
}

// Rounds bytes up to a multiple of 256 (cudaMalloc's alignment), for
// carving several arrays out of one scratch allocation.
inline size_t AlignUp256(size_t bytes) { return (bytes + 255) & ~size_t{255}; }

}  // namespace internal
}  // namespace petrel

// Returns from the enclosing function with a Status when `expr` (a
// cudaError_t or cublasStatus_t expression) fails.
#define PETREL_CUDA_RETURN_IF_ERROR(expr)                      \
  do {                                                         \
    absl::Status petrel_cuda_status_ =                         \
        ::petrel::internal::CudaToStatus((expr), #expr);       \
    if (!petrel_cuda_status_.ok()) return petrel_cuda_status_; \
  } while (0)

// Returns the launch error of the kernel just launched, if any.
#define PETREL_CUDA_RETURN_IF_LAUNCH_ERROR(kernel)             \
  do {                                                         \
    absl::Status petrel_cuda_status_ =                         \
        ::petrel::internal::LaunchStatus(kernel);              \
    if (!petrel_cuda_status_.ok()) return petrel_cuda_status_; \
  } while (0)

#endif  // PETREL_KERNELS_CUDA_STATUS_H_
