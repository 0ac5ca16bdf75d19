// Dispatchers of kernels/embedding.h: every size check happens here, so
// the CUDA entry points (kernels/internal/cuda_ops.h) can assume them.
#include "kernels/embedding.h"

#include "absl/strings/str_cat.h"

#include "base/status_macros.h"
#include "kernels/internal/cuda_ops.h"
#include "kernels/internal/embedding_cpu.h"

namespace petrel {
namespace {

// The checks that need no look at the batch's contents (which may live on
// a device): shapes of every span. Sets *num_rows to the unique rows.
absl::Status CheckShapes(const FieldBatchView& batch, const char* rows_name,
                         size_t rows_size, size_t dim, const char* out_name,
                         size_t out_size, size_t* num_rows) {
  if (dim == 0) return absl::InvalidArgumentError("embedding dim is 0");
  if (batch.num_fields == 0) {
    return absl::InvalidArgumentError("num_fields is 0");
  }
  const SparseBatchView& sparse = batch.sparse;
  if (sparse.offsets.empty()) {
    return absl::InvalidArgumentError(
        "offsets is empty, expected examples + 1 entries");
  }
  PETREL_RETURN_IF_ERROR(
      CheckSize("values", sparse.values.size(), sparse.nnz()));
  PETREL_RETURN_IF_ERROR(
      CheckSize("fields", batch.fields.size(), sparse.nnz()));
  if (rows_size % dim != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(rows_name, " has ", rows_size,
                     " entries, not a multiple of dim ", dim));
  }
  *num_rows = rows_size / dim;
  size_t pooled = 0;
  if (__builtin_mul_overflow(sparse.num_examples(), batch.num_fields,
                             &pooled) ||
      __builtin_mul_overflow(pooled, dim, &pooled)) {
    return absl::InvalidArgumentError(
        absl::StrCat(sparse.num_examples(), " examples x ", batch.num_fields,
                     " fields x dim ", dim, " overflows"));
  }
  return CheckSize(out_name, out_size, pooled);
}

// The checks of the contents, for host spans: the CSR structure, every
// inverse entry below num_rows and every field below num_fields.
absl::Status CheckContents(const FieldBatchView& batch, size_t num_rows) {
  PETREL_RETURN_IF_ERROR(ValidateSparseBatch(batch.sparse, num_rows));
  uint32_t max_field = 0;
  for (uint32_t f : batch.fields) max_field = f > max_field ? f : max_field;
  if (batch.fields.empty() || max_field < batch.num_fields) {
    return absl::OkStatus();
  }
  for (size_t j = 0; j < batch.fields.size(); ++j) {
    if (batch.fields[j] >= batch.num_fields) {
      return absl::InvalidArgumentError(
          absl::StrCat("fields[", j, "] = ", batch.fields[j],
                       " is out of range for ", batch.num_fields, " fields"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status EmbeddingPoolForward(const Device& device,
                                  const FieldBatchView& batch,
                                  absl::Span<const float> rows, size_t dim,
                                  Pooling pooling, absl::Span<float> out) {
  size_t num_rows = 0;
  PETREL_RETURN_IF_ERROR(CheckShapes(batch, "rows", rows.size(), dim, "out",
                                     out.size(), &num_rows));
  if (device.is_cuda()) {
#ifdef PETREL_HAVE_CUDA
    return internal::EmbeddingPoolForwardCuda(device, batch, rows, dim, pooling,
                                              out);
#else
    return absl::FailedPreconditionError("no CUDA in this build");
#endif
  }
  PETREL_RETURN_IF_ERROR(CheckContents(batch, num_rows));
  internal::EmbeddingPoolForwardCpu(batch, rows, dim, pooling, out);
  return absl::OkStatus();
}

absl::Status EmbeddingPoolBackward(const Device& device,
                                   const FieldBatchView& batch,
                                   absl::Span<const float> grad_out, size_t dim,
                                   Pooling pooling, bool deterministic,
                                   absl::Span<float> grad_rows) {
  size_t num_rows = 0;
  PETREL_RETURN_IF_ERROR(CheckShapes(batch, "grad_rows", grad_rows.size(), dim,
                                     "grad_out", grad_out.size(), &num_rows));
  if (device.is_cuda()) {
#ifdef PETREL_HAVE_CUDA
    return internal::EmbeddingPoolBackwardCuda(
        device, batch, grad_out, dim, pooling, deterministic, grad_rows);
#else
    (void)deterministic;
    return absl::FailedPreconditionError("no CUDA in this build");
#endif
  }
  PETREL_RETURN_IF_ERROR(CheckContents(batch, num_rows));
  internal::EmbeddingPoolBackwardCpu(batch, grad_out, dim, pooling, grad_rows);
  return absl::OkStatus();
}

}  // namespace petrel
