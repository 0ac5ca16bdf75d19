// The view of a batch that the sparse kernels (LR, FM and later embedding
// pooling) read: a CSR batch whose keys have been replaced by row indices
// into the unique keys that Dedup produced.
//
// Example i owns feature positions offsets[i] .. offsets[i+1]-1; position j
// refers to unique row inverse[j] with feature value values[j]. An example
// may have no features (offsets[i] == offsets[i+1]).
//
// A view borrows its spans; they must stay valid while a kernel uses them.
// For a device kernel the spans point at device memory.
#ifndef PETREL_KERNELS_SPARSE_BATCH_H_
#define PETREL_KERNELS_SPARSE_BATCH_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/types/span.h"

namespace petrel {

struct SparseBatchView {
  absl::Span<const uint32_t> offsets;  // examples + 1 entries
  absl::Span<const uint32_t> inverse;  // nnz entries, each < unique rows
  absl::Span<const float> values;      // nnz entries

  // Examples in the batch (0 when offsets is empty, which is invalid).
  size_t num_examples() const {
    return offsets.empty() ? 0 : offsets.size() - 1;
  }
  size_t nnz() const { return inverse.size(); }
};

// Checks a view against `num_unique` rows of parameters:
//   offsets has at least one entry, offsets[0] == 0, offsets never
//   decreases, offsets.back() == nnz, inverse.size() == values.size(), and
//   every inverse[j] < num_unique.
// Returns InvalidArgument naming the first violation. Costs O(examples +
// nnz); the CPU kernels call it on every call, so their callers need not.
absl::Status ValidateSparseBatch(const SparseBatchView& batch,
                                 size_t num_unique);

// InvalidArgument unless `span_size == expected`, naming `what`.
absl::Status CheckSize(const char* what, size_t span_size, size_t expected);

}  // namespace petrel

#endif  // PETREL_KERNELS_SPARSE_BATCH_H_
