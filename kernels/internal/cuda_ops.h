// The CUDA halves of the device-neutral kernels, implemented in the
// <op>_cuda.cu files and called only by the dispatchers in <op>.cc when the
// device is CUDA (and only in builds with PETREL_HAVE_CUDA). The
// dispatchers have already checked every span size against the shapes, so
// these functions only launch work on device.cuda()'s stream and turn CUDA
// and cuBLAS return codes into Status (PETREL_CUDA_RETURN_IF_ERROR).
// Spans point at device memory. Semantics: the public headers.
#ifndef PETREL_KERNELS_INTERNAL_CUDA_OPS_H_
#define PETREL_KERNELS_INTERNAL_CUDA_OPS_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

#include "kernels/dense.h"
#include "kernels/device.h"
#include "kernels/embedding.h"
#include "kernels/optimizer_rows.h"

namespace petrel {
namespace internal {

absl::Status DedupSortedCuda(const Device& device,
                             absl::Span<const uint64_t> keys,
                             absl::Span<uint64_t> unique,
                             absl::Span<uint32_t> inverse, size_t* num_unique);

absl::Status EmbeddingPoolForwardCuda(const Device& device,
                                      const FieldBatchView& batch,
                                      absl::Span<const float> rows, size_t dim,
                                      Pooling pooling, absl::Span<float> out);
absl::Status EmbeddingPoolBackwardCuda(const Device& device,
                                       const FieldBatchView& batch,
                                       absl::Span<const float> grad_out,
                                       size_t dim, Pooling pooling,
                                       bool deterministic,
                                       absl::Span<float> grad_rows);

absl::Status GemmCuda(const Device& device, bool trans_a, bool trans_b,
                      size_t m, size_t n, size_t k, float alpha,
                      absl::Span<const float> a, absl::Span<const float> b,
                      float beta, absl::Span<float> c);
absl::Status AddBiasCuda(const Device& device, size_t rows, size_t cols,
                         absl::Span<const float> bias, absl::Span<float> y);
absl::Status BiasGradCuda(const Device& device, size_t rows, size_t cols,
                          absl::Span<const float> dy, absl::Span<float> dbias);
absl::Status ReluCuda(const Device& device, absl::Span<float> y);
absl::Status ReluBackwardCuda(const Device& device, absl::Span<const float> y,
                              absl::Span<float> dy);

absl::Status SigmoidCrossEntropyCuda(const Device& device,
                                     absl::Span<const float> logits,
                                     absl::Span<const float> labels,
                                     absl::Span<float> probs,
                                     absl::Span<float> dlogits,
                                     absl::Span<float> losses);

absl::Status AdagradRowUpdateCuda(const Device& device,
                                  const AdagradRowParams& params,
                                  absl::Span<float> w, absl::Span<float> acc,
                                  absl::Span<const float> g);
absl::Status AdamRowUpdateCuda(const Device& device,
                               const AdamRowParams& params, size_t dim,
                               absl::Span<float> w, absl::Span<float> m,
                               absl::Span<float> v, absl::Span<float> steps,
                               absl::Span<const float> g);
absl::Status FtrlRowUpdateCuda(const Device& device,
                               const FtrlRowParams& params, absl::Span<float> w,
                               absl::Span<float> z, absl::Span<float> n,
                               absl::Span<const float> g);

// Number of CUDA devices, 0 with the reason in *why (non-null) when the
// driver or runtime reports none (device.cc caches the answer).
int CudaProbeDeviceCount(std::string* why);

// Memory (device_memory.cc dispatches here for CUDA devices).
absl::StatusOr<void*> CudaAllocate(const Device& device, size_t bytes);
void CudaFree(const Device& device, void* ptr);
absl::StatusOr<void*> CudaPinnedAllocate(const Device& device, size_t bytes);
void CudaPinnedFree(const Device& device, void* ptr);
// kind: 0 host->device, 1 device->host, 2 device->device (async on stream).
absl::Status CudaCopy(const Device& device, const void* src, void* dst,
                      size_t bytes, int kind);
absl::Status CudaFillZero(const Device& device, void* dst, size_t bytes);

}  // namespace internal
}  // namespace petrel

#endif  // PETREL_KERNELS_INTERNAL_CUDA_OPS_H_
