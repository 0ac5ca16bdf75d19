// Embedding gather and pooling per field, and its backward scatter-add,
// over a deduplicated batch whose positions also carry a field number.
//
// Example i owns positions offsets[i] .. offsets[i+1]-1; position j names
// unique row inverse[j] (rows is [unique x dim], row-major), has feature
// value values[j] and belongs to field fields[j] < num_fields. The pooled
// output is [examples x num_fields x dim]:
//
//   sum:   out[i,f,:] = sum_{j in i, fields[j]==f} values[j] *
//   rows[inverse[j],:] mean:  the same divided by count(i,f), the number of
//   such positions
//
// A field with no position in an example pools to zeros. The backward
// overwrites grad_rows ([unique x dim]) with
//
//   grad_rows[u,:] = sum_{j: inverse[j]==u} values[j] *
//   grad_out[i(j),fields[j],:]
//                    (/ count(i(j),fields[j]) for mean)
//
// (0 for rows no position names). Deterministic mode sums each row's
// positions in position order, so repeated runs give identical bits; the
// fast CUDA mode uses atomics (sum order varies, same value within float
// rounding). The CPU always runs in position order.
//
// Errors: InvalidArgument when the batch is invalid for the rows
// (ValidateSparseBatch), fields has the wrong size or a field is out of
// range, or an output has the wrong size. The CUDA path validates sizes
// only (its spans are on the device); REQUIRES there that every inverse and
// field entry is in range, as the trainer's Dedup guarantees.
//
// CUDA scratch slots: 0 and 1.
#ifndef PETREL_KERNELS_EMBEDDING_H_
#define PETREL_KERNELS_EMBEDDING_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/types/span.h"

#include "kernels/device.h"
#include "kernels/sparse_batch.h"

namespace petrel {

enum class Pooling { kSum, kMean };

struct FieldBatchView {
  SparseBatchView sparse;             // offsets, inverse, values
  absl::Span<const uint32_t> fields;  // nnz entries, each < num_fields
  size_t num_fields = 1;
};

absl::Status EmbeddingPoolForward(const Device& device,
                                  const FieldBatchView& batch,
                                  absl::Span<const float> rows, size_t dim,
                                  Pooling pooling, absl::Span<float> out);

absl::Status EmbeddingPoolBackward(const Device& device,
                                   const FieldBatchView& batch,
                                   absl::Span<const float> grad_out, size_t dim,
                                   Pooling pooling, bool deterministic,
                                   absl::Span<float> grad_rows);

}  // namespace petrel

#endif  // PETREL_KERNELS_EMBEDDING_H_
