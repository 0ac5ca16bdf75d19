// The CUDA half of kernels/device_memory.h (internal::Cuda* in
// kernels/internal/cuda_ops.h): cudaMalloc/cudaMallocHost and copies queued
// on the context's stream. Built only with PETREL_HAVE_CUDA.
#include <string>

#include <cuda_runtime.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "glog/logging.h"

#include "kernels/cuda_context.h"
#include "kernels/cuda_status.h"
#include "kernels/internal/cuda_ops.h"

namespace petrel {
namespace internal {
namespace {

// Names the call, its size and the device, so that an out-of-memory tells
// the operator what was asked for.
absl::Status AllocStatus(cudaError_t err, const char* call, size_t bytes,
                         const Device& device) {
  return CudaToStatus(
      err,
      absl::StrCat(call, "(", bytes, " bytes) on ", device.name()).c_str());
}

}  // namespace

int CudaProbeDeviceCount(std::string* why) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    if (why != nullptr) {
      *why = absl::StrCat("cudaGetDeviceCount: ", cudaGetErrorName(err), " (",
                          cudaGetErrorString(err), ")");
    }
    return 0;
  }
  if (count == 0 && why != nullptr) *why = "the CUDA runtime reports 0 devices";
  return count;
}

absl::StatusOr<void*> CudaAllocate(const Device& device, size_t bytes) {
  if (bytes == 0) return nullptr;
  PETREL_CUDA_RETURN_IF_ERROR(cudaSetDevice(device.cuda()->ordinal()));
  void* ptr = nullptr;
  const cudaError_t err = cudaMalloc(&ptr, bytes);
  if (err != cudaSuccess) return AllocStatus(err, "cudaMalloc", bytes, device);
  return ptr;
}

void CudaFree(const Device& device, void* ptr) {
  if (ptr == nullptr) return;
  const cudaError_t err = cudaFree(ptr);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    LOG(WARNING) << "cudaFree on " << device.name() << ": "
                 << cudaGetErrorString(err);
  }
}

absl::StatusOr<void*> CudaPinnedAllocate(const Device& device, size_t bytes) {
  if (bytes == 0) return nullptr;
  PETREL_CUDA_RETURN_IF_ERROR(cudaSetDevice(device.cuda()->ordinal()));
  void* ptr = nullptr;
  const cudaError_t err = cudaMallocHost(&ptr, bytes);
  if (err != cudaSuccess) {
    return AllocStatus(err, "cudaMallocHost", bytes, device);
  }
  return ptr;
}

void CudaPinnedFree(const Device& device, void* ptr) {
  if (ptr == nullptr) return;
  const cudaError_t err = cudaFreeHost(ptr);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    LOG(WARNING) << "cudaFreeHost on " << device.name() << ": "
                 << cudaGetErrorString(err);
  }
}

absl::Status CudaCopy(const Device& device, const void* src, void* dst,
                      size_t bytes, int kind) {
  if (bytes == 0) return absl::OkStatus();
  cudaMemcpyKind k;
  switch (kind) {
    case 0:
      k = cudaMemcpyHostToDevice;
      break;
    case 1:
      k = cudaMemcpyDeviceToHost;
      break;
    case 2:
      k = cudaMemcpyDeviceToDevice;
      break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("CudaCopy: unknown kind ", kind));
  }
  PETREL_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(dst, src, bytes, k, StreamOf(device)));
  return absl::OkStatus();
}

absl::Status CudaFillZero(const Device& device, void* dst, size_t bytes) {
  if (bytes == 0) return absl::OkStatus();
  PETREL_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(dst, 0, bytes, StreamOf(device)));
  return absl::OkStatus();
}

}  // namespace internal
}  // namespace petrel
