// The encoding of a run of parsed examples (a Batch) as one block of the
// parsed-example cache, in memory or in a cache file.
//
// Layout (host byte order; docs/configuration.md describes the file):
//   u32 examples n, u32 nnz, u32 flags (1: every value is 1 and values are
//   left out; 2: fields present; 4: every key is below 2^32 and keys are
//   stored as u32), u32 num_numeric, u64 payload bytes, u64 Checksum64 of
//   the 24 bytes before it and the payload;
//   payload: f32 labels[n], u32 ends[n] (offsets[i+1]), u64 or u32 keys[nnz],
//   [f32 values[nnz]], [u32 fields[nnz]], f32 numeric[n * num_numeric].
//
// Thread-safe (pure functions; a BlockView only points into its bytes).
#ifndef PETREL_WORKER_DATA_INTERNAL_CACHE_BLOCK_H_
#define PETREL_WORKER_DATA_INTERNAL_CACHE_BLOCK_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

#include "worker/data/batch.h"

namespace petrel {
namespace internal {

inline constexpr size_t kBlockHeaderBytes = 32;

// Appends the block encoding `batch` to *out.
// REQUIRES: batch is consistent (worker/data/batch.h) and has >= 1 example.
void EncodeBlock(const Batch& batch, std::string* out);

// Payload bytes of the block whose header is at `header`
// (kBlockHeaderBytes long), for reading a block in two steps.
uint64_t BlockPayloadBytes(const char* header);

// A checked block: counts and where each column starts in the bytes.
struct BlockView {
  uint32_t examples = 0;
  uint32_t nnz = 0;
  int num_numeric = 0;
  bool values_one = false;
  bool has_fields = false;
  bool keys32 = false;  // keys are stored as u32
  const char* labels = nullptr;
  const char* ends = nullptr;
  const char* keys = nullptr;
  const char* values = nullptr;  // null when values_one
  const char* fields = nullptr;  // null unless has_fields
  const char* numeric = nullptr;
};

// Checks that `bytes` is exactly one well-formed block with a matching
// checksum. DataLoss saying what is wrong otherwise. The view points into
// `bytes`, which must outlive it.
absl::StatusOr<BlockView> ParseBlock(absl::string_view bytes);

// Appends examples [begin, end) of `block` to *batch (fields and numeric
// only when the block has them). REQUIRES: begin <= end <= block.examples.
void AppendExamples(const BlockView& block, size_t begin, size_t end,
                    Batch* batch);

}  // namespace internal
}  // namespace petrel

#endif  // PETREL_WORKER_DATA_INTERNAL_CACHE_BLOCK_H_
