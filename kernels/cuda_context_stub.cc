// CudaContext in a build without CUDA: there is no device to open.
#include "kernels/cuda_context.h"

namespace petrel {

absl::StatusOr<std::unique_ptr<CudaContext>> CudaContext::Create(int) {
  return absl::FailedPreconditionError(
      "this build of Petrel has no CUDA (nvcc was not found at configure "
      "time); rebuild on a machine with the CUDA toolkit");
}

CudaContext::~CudaContext() = default;

absl::StatusOr<void*> CudaContext::Scratch(int, size_t) {
  return absl::FailedPreconditionError("no CUDA in this build");
}

absl::Status CudaContext::Synchronize() {
  return absl::FailedPreconditionError("no CUDA in this build");
}

}  // namespace petrel
