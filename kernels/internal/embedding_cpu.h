// The CPU halves of kernels/embedding.h, called by its dispatchers after
// they have validated the batch (sizes and contents) and the outputs.
#ifndef PETREL_KERNELS_INTERNAL_EMBEDDING_CPU_H_
#define PETREL_KERNELS_INTERNAL_EMBEDDING_CPU_H_

#include <cstddef>

#include "absl/types/span.h"

#include "kernels/embedding.h"

namespace petrel {
namespace internal {

void EmbeddingPoolForwardCpu(const FieldBatchView& batch,
                             absl::Span<const float> rows, size_t dim,
                             Pooling pooling, absl::Span<float> out);

// Always deterministic: sums each row's positions in position order.
void EmbeddingPoolBackwardCpu(const FieldBatchView& batch,
                              absl::Span<const float> grad_out, size_t dim,
                              Pooling pooling, absl::Span<float> grad_rows);

}  // namespace internal
}  // namespace petrel

#endif  // PETREL_KERNELS_INTERNAL_EMBEDDING_CPU_H_
