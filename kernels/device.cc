#include "kernels/device.h"

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

#include "kernels/cuda_context.h"
#include "kernels/internal/cuda_ops.h"

namespace petrel {

Device Device::Cuda(CudaContext* context) {
  CHECK(context != nullptr);
  Device device;
  device.kind_ = DeviceKind::kCuda;
  device.cuda_ = context;
  return device;
}

std::string Device::name() const {
  if (!is_cuda()) return "cpu";
  return absl::StrCat("cuda:", cuda_->ordinal(), " (", cuda_->device_name(),
                      ")");
}

absl::Status RequireCpu(const Device& device, absl::string_view op) {
  if (!device.is_cuda()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      op, " runs on the CPU only (host memory), not on ", device.name()));
}

bool BuiltWithCuda() {
#ifdef PETREL_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

int CudaDeviceCount(std::string* why) {
#ifdef PETREL_HAVE_CUDA
  struct Probe {
    int count = 0;
    std::string why;
  };
  // Probed once (thread-safe static initialization), like LDB's CRC probe.
  static const Probe* const probe = [] {
    auto* p = new Probe;
    p->count = internal::CudaProbeDeviceCount(&p->why);
    return p;
  }();
  if (why != nullptr) *why = probe->count > 0 ? "" : probe->why;
  return probe->count;
#else
  if (why != nullptr) *why = "built without CUDA";
  return 0;
#endif
}

absl::StatusOr<DeviceChoice> ParseDeviceChoice(absl::string_view text) {
  if (text == "auto") return DeviceChoice::kAuto;
  if (text == "cpu") return DeviceChoice::kCpu;
  if (text == "cuda") return DeviceChoice::kCuda;
  return absl::InvalidArgumentError(absl::StrCat(
      "device \"", text, "\" is not one of \"auto\", \"cpu\", \"cuda\""));
}

ComputeDevice::ComputeDevice(std::unique_ptr<CudaContext> cuda)
    : cuda_(std::move(cuda)) {}

ComputeDevice::~ComputeDevice() = default;

Device ComputeDevice::device() const {
  return cuda_ != nullptr ? Device::Cuda(cuda_.get()) : Device::Cpu();
}

absl::StatusOr<std::unique_ptr<ComputeDevice>> ComputeDevice::Open(
    DeviceChoice choice, int ordinal) {
  if (ordinal < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cuda device ordinal ", ordinal, " is negative"));
  }
  std::string why;
  const int count = choice == DeviceChoice::kCpu ? 0 : CudaDeviceCount(&why);
  const bool use_cuda =
      (choice == DeviceChoice::kCuda) ||
      (choice == DeviceChoice::kAuto && BuiltWithCuda() && ordinal < count);
  if (!use_cuda) {
    return std::unique_ptr<ComputeDevice>(new ComputeDevice(nullptr));
  }
  if (count == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("no usable CUDA device: ", why));
  }
  if (ordinal >= count) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cuda device ordinal ", ordinal, " does not exist: this machine has ",
        count, " CUDA device(s)"));
  }
  absl::StatusOr<std::unique_ptr<CudaContext>> context =
      CudaContext::Create(ordinal);
  if (!context.ok()) return context.status();
  return std::unique_ptr<ComputeDevice>(new ComputeDevice(*std::move(context)));
}

}  // namespace petrel
