// Memory on a Device (kernels/device.h) and copies between it and the host.
//
// On the CPU "device memory" is host memory and copies are memcpy. On CUDA,
// device memory comes from cudaMalloc, pinned host memory from
// cudaMallocHost, and copies are queued on the context's stream: a copy is
// complete, and its host buffer may be reused, only after
// Synchronize(device). Copies from pageable (not pinned) host memory work
// but do not overlap with other work.
//
// Every CUDA error becomes a Status: ResourceExhausted for out-of-memory
// (naming the bytes asked for), Internal otherwise (naming the call).
//
// Thread safety: functions are as thread-safe as the device's stream;
// arrays are not thread-safe.
#ifndef PETREL_KERNELS_DEVICE_MEMORY_H_
#define PETREL_KERNELS_DEVICE_MEMORY_H_

#include <cstddef>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

#include "kernels/device.h"

namespace petrel {

// Untyped primitives. Allocations are aligned to at least 64 bytes;
// a size of 0 allocates nothing and returns nullptr.
absl::StatusOr<void*> DeviceAllocate(const Device& device, size_t bytes);
void DeviceFree(const Device& device, void* ptr);
// Host memory, page-locked when `device` is CUDA.
absl::StatusOr<void*> PinnedAllocate(const Device& device, size_t bytes);
void PinnedFree(const Device& device, void* ptr);

absl::Status CopyHostToDevice(const Device& device, const void* host, void* dst,
                              size_t bytes);
absl::Status CopyDeviceToHost(const Device& device, const void* src, void* host,
                              size_t bytes);
absl::Status CopyDeviceToDevice(const Device& device, const void* src,
                                void* dst, size_t bytes);
absl::Status FillZero(const Device& device, void* dst, size_t bytes);
// Waits for the device's queued work (a no-op on the CPU).
absl::Status Synchronize(const Device& device);

// An owning array of T on a device (or pinned on the host, for
// PinnedArray). Move-only. Resize keeps the allocation when it is large
// enough; after growing, the contents are unspecified.
template <typename T, bool kPinned>
class BasicDeviceArray {
 public:
  BasicDeviceArray() = default;
  explicit BasicDeviceArray(const Device& device) : device_(device) {}
  ~BasicDeviceArray() { Release(); }
  BasicDeviceArray(BasicDeviceArray&& o) noexcept { *this = std::move(o); }
  BasicDeviceArray& operator=(BasicDeviceArray&& o) noexcept {
    if (this != &o) {
      Release();
      device_ = o.device_;
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
      capacity_ = std::exchange(o.capacity_, 0);
    }
    return *this;
  }
  BasicDeviceArray(const BasicDeviceArray&) = delete;
  BasicDeviceArray& operator=(const BasicDeviceArray&) = delete;

  absl::Status Resize(size_t n) {
    if (n > capacity_) {
      Release();
      absl::StatusOr<void*> p = kPinned
                                    ? PinnedAllocate(device_, n * sizeof(T))
                                    : DeviceAllocate(device_, n * sizeof(T));
      if (!p.ok()) return p.status();
      data_ = static_cast<T*>(*p);
      capacity_ = n;
    }
    size_ = n;
    return absl::OkStatus();
  }

  const Device& device() const { return device_; }
  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return size_; }
  absl::Span<T> span() { return absl::MakeSpan(data_, size_); }
  absl::Span<const T> span() const { return absl::MakeConstSpan(data_, size_); }

 private:
  void Release() {
    if (data_ == nullptr) return;
    if (kPinned) {
      PinnedFree(device_, data_);
    } else {
      DeviceFree(device_, data_);
    }
    data_ = nullptr;
    size_ = capacity_ = 0;
  }

  Device device_;
  T* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

template <typename T>
using DeviceArray = BasicDeviceArray<T, false>;
template <typename T>
using PinnedArray = BasicDeviceArray<T, true>;

// Typed copies; InvalidArgument when the sizes differ.
template <typename T>
absl::Status CopyToDevice(const Device& device, absl::Span<const T> host,
                          absl::Span<T> dst) {
  if (host.size() != dst.size()) {
    return absl::InvalidArgumentError("CopyToDevice: sizes differ");
  }
  return CopyHostToDevice(device, host.data(), dst.data(),
                          host.size() * sizeof(T));
}
template <typename T>
absl::Status CopyToHost(const Device& device, absl::Span<const T> src,
                        absl::Span<T> host) {
  if (host.size() != src.size()) {
    return absl::InvalidArgumentError("CopyToHost: sizes differ");
  }
  return CopyDeviceToHost(device, src.data(), host.data(),
                          src.size() * sizeof(T));
}

}  // namespace petrel

#endif  // PETREL_KERNELS_DEVICE_MEMORY_H_
