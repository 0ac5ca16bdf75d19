// Where kernels run. A Device names the host CPU or one CUDA device (through
// the CudaContext that owns its stream, cuBLAS handle and scratch memory).
// Every device-neutral kernel (kernels/<op>.h) takes a Device first and spans
// that live on that device: host memory for the CPU, device memory for CUDA.
// The choice is made at run time: a build without CUDA, or a machine without
// a GPU, runs everything on the CPU (STYLE.md §14).
//
// CUDA kernels are asynchronous on the context's stream unless their header
// says they synchronize; host code reads their results after
// Synchronize(device) (kernels/device_memory.h).
//
// Thread safety: a Device is an immutable value; a CudaContext's stream is
// used by one thread at a time (one context per trainer thread).
#ifndef PETREL_KERNELS_DEVICE_H_
#define PETREL_KERNELS_DEVICE_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace petrel {

class CudaContext;  // kernels/cuda_context.h

enum class DeviceKind { kCpu, kCuda };

class Device {
 public:
  Device() = default;  // the CPU
  static Device Cpu() { return Device(); }
  // REQUIRES: context non-null; it must outlive every copy of the Device.
  static Device Cuda(CudaContext* context);

  DeviceKind kind() const { return kind_; }
  bool is_cuda() const { return kind_ == DeviceKind::kCuda; }
  // The CUDA context; null for the CPU.
  CudaContext* cuda() const { return cuda_; }
  // "cpu", or "cuda:ORDINAL (DEVICE NAME)".
  std::string name() const;

 private:
  DeviceKind kind_ = DeviceKind::kCpu;
  CudaContext* cuda_ = nullptr;
};

// For the dispatchers of CPU-only kernels (kernels/lr.h, kernels/fm.h):
// FailedPrecondition naming `op` when `device` is CUDA, OK for the CPU.
absl::Status RequireCpu(const Device& device, absl::string_view op);

// True when this build compiled the CUDA kernels (PETREL_HAVE_CUDA).
bool BuiltWithCuda();

// Number of CUDA devices this process can use: 0 without CUDA in the build,
// without a driver or without a device; then *why (when non-null) says
// which. Probes once and caches the answer.
int CudaDeviceCount(std::string* why = nullptr);

// What the operator asked for (--device).
enum class DeviceChoice { kAuto, kCpu, kCuda };

// Parses "auto", "cpu" or "cuda"; InvalidArgument naming the text otherwise.
absl::StatusOr<DeviceChoice> ParseDeviceChoice(absl::string_view text);

// An opened device: nothing for the CPU, a CudaContext on one GPU for CUDA.
class ComputeDevice {
 public:
  // kAuto: CUDA device `ordinal` when BuiltWithCuda() and it exists, else
  // the CPU. kCpu: the CPU. kCuda: FailedPrecondition saying why when there
  // is no usable device (no CUDA in the build, no driver, no device), or the
  // context's error (e.g. ResourceExhausted).
  static absl::StatusOr<std::unique_ptr<ComputeDevice>> Open(
      DeviceChoice choice, int ordinal = 0);
  ~ComputeDevice();
  ComputeDevice(const ComputeDevice&) = delete;
  ComputeDevice& operator=(const ComputeDevice&) = delete;

  Device device() const;

 private:
  explicit ComputeDevice(std::unique_ptr<CudaContext> cuda);
  std::unique_ptr<CudaContext> cuda_;
};

}  // namespace petrel

#endif  // PETREL_KERNELS_DEVICE_H_
