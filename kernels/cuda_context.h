// CudaContext: one CUDA device as the kernels use it: a non-blocking stream
// every kernel and copy of this context runs on, a cuBLAS handle bound to
// that stream, and scratch memory that grows and is reused across calls.
// This header never includes CUDA headers: the handles are opaque here and
// only the .cu/.cc files of kernels/ that are built with CUDA use them.
// Without CUDA in the build, Create returns FailedPrecondition.
//
// Thread safety: not thread-safe; use a context from one thread at a time.
#ifndef PETREL_KERNELS_CUDA_CONTEXT_H_
#define PETREL_KERNELS_CUDA_CONTEXT_H_

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace petrel {

class CudaContext {
 public:
  // Selects device `ordinal` and creates the stream and cuBLAS handle.
  // Errors: FailedPrecondition (no CUDA in the build, no such device),
  // ResourceExhausted (out of memory), Internal (other CUDA/cuBLAS errors),
  // each naming the CUDA call and its error string.
  static absl::StatusOr<std::unique_ptr<CudaContext>> Create(int ordinal);
  ~CudaContext();
  CudaContext(const CudaContext&) = delete;
  CudaContext& operator=(const CudaContext&) = delete;

  int ordinal() const { return ordinal_; }
  const std::string& device_name() const { return device_name_; }
  void* stream() const { return stream_; }  // cudaStream_t
  void* blas() const { return blas_; }      // cublasHandle_t

  // Device memory of at least `bytes` for scratch slot `slot` (0..7),
  // valid until the next Scratch call for the same slot. Kernels document
  // the slots they use. Errors: ResourceExhausted naming the size.
  absl::StatusOr<void*> Scratch(int slot, size_t bytes);

  // Waits for all work queued on the stream; returns the first error.
  absl::Status Synchronize();

 private:
  CudaContext() = default;

  int ordinal_ = 0;
  std::string device_name_;
  void* stream_ = nullptr;
  void* blas_ = nullptr;
  struct ScratchSlot {
    void* ptr = nullptr;
    size_t bytes = 0;
  };
  std::vector<ScratchSlot> scratch_;
};

}  // namespace petrel

#endif  // PETREL_KERNELS_CUDA_CONTEXT_H_
