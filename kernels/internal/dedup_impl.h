// The Dedup strategies compared by kernels/dedup_benchmark.cc. Dedup calls
// the fastest (see dedup_cpu.cc); the others stay for the benchmark and are
// tested against the same reference. Each has Dedup's contract, without the
// size check (REQUIRES: keys.size() < 2^32).
#ifndef PETREL_KERNELS_INTERNAL_DEDUP_IMPL_H_
#define PETREL_KERNELS_INTERNAL_DEDUP_IMPL_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"

namespace petrel {
namespace internal {

// Linear-probing table with a multiplicative hash, sized to a power of two
// of at least twice the number of keys.
void DedupOpenAddressing(absl::Span<const uint64_t> keys,
                         std::vector<uint64_t>* unique,
                         std::vector<uint32_t>* inverse);

// absl::flat_hash_map<uint64_t, uint32_t>, reserved for keys.size().
void DedupFlatHashMap(absl::Span<const uint64_t> keys,
                      std::vector<uint64_t>* unique,
                      std::vector<uint32_t>* inverse);

// Sorts (key, position) pairs, then numbers groups in order of first
// appearance.
void DedupSort(absl::Span<const uint64_t> keys, std::vector<uint64_t>* unique,
               std::vector<uint32_t>* inverse);

}  // namespace internal
}  // namespace petrel

#endif  // PETREL_KERNELS_INTERNAL_DEDUP_IMPL_H_
