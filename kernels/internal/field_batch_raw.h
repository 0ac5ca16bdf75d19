// FieldBatchRaw: the raw pointers and sizes of a FieldBatchView
// (kernels/embedding.h), the one form in which the CPU and the CUDA
// embedding loops read a batch. A plain struct, so a CUDA kernel can take
// it (or a struct derived from it) by value.
//
// Thread safety: a value type; its pointers are valid while the view's
// storage is.
#ifndef PETREL_KERNELS_INTERNAL_FIELD_BATCH_RAW_H_
#define PETREL_KERNELS_INTERNAL_FIELD_BATCH_RAW_H_

#include <cstddef>
#include <cstdint>

#include "kernels/embedding.h"

namespace petrel {
namespace internal {

struct FieldBatchRaw {
  const uint32_t* offsets;  // [examples + 1]
  const uint32_t* inverse;  // [nnz]
  const float* values;      // [nnz]
  const uint32_t* fields;   // [nnz]
  size_t examples;
  size_t num_fields;
};

inline FieldBatchRaw RawOf(const FieldBatchView& view) {
  return FieldBatchRaw{view.sparse.offsets.data(), view.sparse.inverse.data(),
                       view.sparse.values.data(),  view.fields.data(),
                       view.sparse.num_examples(), view.num_fields};
}

}  // namespace internal
}  // namespace petrel

#endif  // PETREL_KERNELS_INTERNAL_FIELD_BATCH_RAW_H_
