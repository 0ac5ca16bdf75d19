#include "kernels/device_memory.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"

#include "kernels/cuda_context.h"
#include "kernels/internal/cuda_ops.h"

namespace petrel {
namespace {

constexpr size_t kAlignment = 64;

// aligned_alloc wants a size that is a multiple of the alignment.
absl::StatusOr<void*> HostAllocate(size_t bytes) {
  if (bytes == 0) return nullptr;
  if (bytes > SIZE_MAX - kAlignment) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot allocate ", bytes, " bytes of host memory"));
  }
  const size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  void* ptr = std::aligned_alloc(kAlignment, rounded);
  if (ptr == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("out of host memory allocating ", bytes, " bytes"));
  }
  return ptr;
}

[[maybe_unused]] absl::Status NoCuda() {
  return absl::FailedPreconditionError("no CUDA in this build");
}

// Copies on the CPU, or queues a copy of the given kind (see
// internal::CudaCopy) on a CUDA device's stream.
absl::Status Copy(const Device& device, const void* src, void* dst,
                  size_t bytes, int kind) {
  if (bytes == 0) return absl::OkStatus();
  if (device.is_cuda()) {
#ifdef PETREL_HAVE_CUDA
    return internal::CudaCopy(device, src, dst, bytes, kind);
#else
    (void)kind;
    return NoCuda();
#endif
  }
  std::memcpy(dst, src, bytes);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<void*> DeviceAllocate(const Device& device, size_t bytes) {
  if (device.is_cuda()) {
#ifdef PETREL_HAVE_CUDA
    if (bytes == 0) return nullptr;
    return internal::CudaAllocate(device, bytes);
#else
    return NoCuda();
#endif
  }
  return HostAllocate(bytes);
}

void DeviceFree(const Device& device, void* ptr) {
  if (ptr == nullptr) return;
  if (device.is_cuda()) {
#ifdef PETREL_HAVE_CUDA
    internal::CudaFree(device, ptr);
#endif
    return;
  }
  std::free(ptr);
}

absl::StatusOr<void*> PinnedAllocate(const Device& device, size_t bytes) {
  if (device.is_cuda()) {
#ifdef PETREL_HAVE_CUDA
    if (bytes == 0) return nullptr;
    return internal::CudaPinnedAllocate(device, bytes);
#else
    return NoCuda();
#endif
  }
  return HostAllocate(bytes);
}

void PinnedFree(const Device& device, void* ptr) {
  if (ptr == nullptr) return;
  if (device.is_cuda()) {
#ifdef PETREL_HAVE_CUDA
    internal::CudaPinnedFree(device, ptr);
#endif
    return;
  }
  std::free(ptr);
}

absl::Status CopyHostToDevice(const Device& device, const void* host, void* dst,
                              size_t bytes) {
  return Copy(device, host, dst, bytes, 0);
}

absl::Status CopyDeviceToHost(const Device& device, const void* src, void* host,
                              size_t bytes) {
  return Copy(device, src, host, bytes, 1);
}

absl::Status CopyDeviceToDevice(const Device& device, const void* src,
                                void* dst, size_t bytes) {
  return Copy(device, src, dst, bytes, 2);
}

absl::Status FillZero(const Device& device, void* dst, size_t bytes) {
  if (bytes == 0) return absl::OkStatus();
  if (device.is_cuda()) {
#ifdef PETREL_HAVE_CUDA
    return internal::CudaFillZero(device, dst, bytes);
#else
    return NoCuda();
#endif
  }
  std::memset(dst, 0, bytes);
  return absl::OkStatus();
}

absl::Status Synchronize(const Device& device) {
  if (!device.is_cuda()) return absl::OkStatus();
  return device.cuda()->Synchronize();
}

}  // namespace petrel
