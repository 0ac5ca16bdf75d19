// Batch key deduplication: the unique keys of a batch, in order of first
// appearance, and for every key position the index of its unique key. The
// worker pulls one row per unique key and the sparse kernels address those
// rows through the inverse index (kernels/sparse_batch.h).
//
// Thread safety: a pure function; concurrent calls with distinct outputs are
// safe.
#ifndef PETREL_KERNELS_DEDUP_H_
#define PETREL_KERNELS_DEDUP_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"

#include "kernels/device.h"

namespace petrel {

// Fills `unique` with the distinct values of `keys` in order of first
// appearance and `inverse` (keys.size() entries) with unique[inverse[j]] ==
// keys[j]. Both outputs are overwritten (resized, so their capacity is reused
// across calls and a steady-state call does not grow them).
//
// Any uint64 key is allowed, including 0 and UINT64_MAX. The result is
// deterministic: it depends only on `keys`.
//
// Returns InvalidArgument when keys.size() does not fit in uint32 (inverse
// entries are uint32).
// REQUIRES: unique and inverse are non-null.
absl::Status Dedup(absl::Span<const uint64_t> keys,
                   std::vector<uint64_t>* unique,
                   std::vector<uint32_t>* inverse);

// The device-neutral dedup (the CUDA path sorts). Unlike Dedup, `unique`
// holds the distinct keys in ASCENDING order: unique[0 .. *num_unique-1]
// (the rest of the span is left unspecified); inverse[j] is keys[j]'s index
// there. `unique` and `inverse` need keys.size() entries. Synchronizes (the
// count is read back to the host). CUDA scratch slots: 0 and 1.
// Returns InvalidArgument for wrong sizes or more than 2^32 - 1 keys.
// REQUIRES: num_unique is non-null.
absl::Status DedupSorted(const Device& device, absl::Span<const uint64_t> keys,
                         absl::Span<uint64_t> unique,
                         absl::Span<uint32_t> inverse, size_t* num_unique);

}  // namespace petrel

#endif  // PETREL_KERNELS_DEDUP_H_
