// CudaContext with CUDA in the build (cuda_context_stub.cc otherwise).
#include "kernels/cuda_context.h"

#include <algorithm>
#include <memory>
#include <utility>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "glog/logging.h"

#include "kernels/cuda_status.h"

namespace petrel {
namespace {

constexpr int kScratchSlots = 8;

}  // namespace

absl::StatusOr<std::unique_ptr<CudaContext>> CudaContext::Create(int ordinal) {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    return absl::FailedPreconditionError(
        absl::StrCat("no usable CUDA device: cudaGetDeviceCount: ",
                     cudaGetErrorString(err)));
  }
  if (ordinal < 0 || ordinal >= count) {
    return absl::FailedPreconditionError(absl::StrCat(
        "no CUDA device ", ordinal, " (this machine has ", count, ")"));
  }
  std::unique_ptr<CudaContext> ctx(new CudaContext());
  ctx->ordinal_ = ordinal;
  ctx->scratch_.resize(kScratchSlots);
  PETREL_CUDA_RETURN_IF_ERROR(cudaSetDevice(ordinal));
  cudaDeviceProp prop;
  PETREL_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&prop, ordinal));
  ctx->device_name_ = prop.name;
  cudaStream_t stream = nullptr;
  PETREL_CUDA_RETURN_IF_ERROR(
      cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  ctx->stream_ = stream;
  cublasHandle_t blas = nullptr;
  PETREL_CUDA_RETURN_IF_ERROR(cublasCreate(&blas));
  ctx->blas_ = blas;
  PETREL_CUDA_RETURN_IF_ERROR(cublasSetStream(blas, stream));
  return ctx;
}

CudaContext::~CudaContext() {
  if (stream_ == nullptr && blas_ == nullptr) return;
  // Errors here come from an earlier failure (already reported) or a
  // broken driver; the memory goes away with the process either way.
  cudaError_t err = cudaSetDevice(ordinal_);
  if (err == cudaSuccess && stream_ != nullptr) {
    err = cudaStreamSynchronize(static_cast<cudaStream_t>(stream_));
  }
  if (err != cudaSuccess) {
    LOG(WARNING) << "CudaContext teardown on cuda:" << ordinal_ << ": "
                 << cudaGetErrorString(err);
  }
  for (ScratchSlot& slot : scratch_) {
    if (slot.ptr != nullptr) (void)cudaFree(slot.ptr);
  }
  if (blas_ != nullptr) (void)cublasDestroy(static_cast<cublasHandle_t>(blas_));
  if (stream_ != nullptr) {
    (void)cudaStreamDestroy(static_cast<cudaStream_t>(stream_));
  }
  (void)cudaGetLastError();
}

absl::StatusOr<void*> CudaContext::Scratch(int slot, size_t bytes) {
  if (slot < 0 || slot >= static_cast<int>(scratch_.size())) {
    return absl::InvalidArgumentError(
        absl::StrCat("CudaContext::Scratch: no slot ", slot));
  }
  ScratchSlot& s = scratch_[slot];
  if (bytes <= s.bytes) return s.ptr;
  if (bytes > (size_t{1} << 48)) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "CudaContext::Scratch: ", bytes, " bytes for slot ", slot));
  }
  PETREL_CUDA_RETURN_IF_ERROR(cudaSetDevice(ordinal_));
  const size_t old_bytes = s.bytes;
  if (s.ptr != nullptr) {
    // cudaFree waits for the work queued on the device, which may still
    // read the old scratch.
    PETREL_CUDA_RETURN_IF_ERROR(cudaFree(s.ptr));
    s.ptr = nullptr;
    s.bytes = 0;
  }
  // Grow by at least half again, so that slowly growing batches do not
  // reallocate every time.
  const size_t want =
      internal::AlignUp256(std::max(bytes, old_bytes + old_bytes / 2));
  void* p = nullptr;
  cudaError_t err = cudaMalloc(&p, want);
  if (err != cudaSuccess) {
    return internal::CudaToStatus(
        err, absl::StrCat("cudaMalloc(", want, " bytes) for scratch slot ",
                          slot, " on cuda:", ordinal_)
                 .c_str());
  }
  s.ptr = p;
  s.bytes = want;
  return p;
}

absl::Status CudaContext::Synchronize() {
  PETREL_CUDA_RETURN_IF_ERROR(
      cudaStreamSynchronize(static_cast<cudaStream_t>(stream_)));
  return absl::OkStatus();
}

}  // namespace petrel
