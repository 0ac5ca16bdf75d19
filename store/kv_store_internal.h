// Internals shared by kv_store.cc (pushes) and kv_store_pull.cc (pulls):
// prefetch distances, row copies, the batch of index homes, and the slab
// pool of one width. Not part of the KV layer's interface.
#ifndef PETREL_STORE_KV_STORE_INTERNAL_H_
#define PETREL_STORE_KV_STORE_INTERNAL_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/base/optimization.h"
#include "absl/types/span.h"
#include "glog/logging.h"

#include "base/huge_page_memory.h"
#include "base/row_index.h"
#include "store/kv_store.h"

namespace petrel {
namespace kv_store_internal {

// How many keys ahead a lookup or a row is prefetched: about one memory
// latency's worth of keys at a few ns each. 32 rather than 16 (and 8 for
// rows in their slot): on an AMD EPYC VM, 10^7 resident keys, 16 left a
// dim-1 push 20% and pull 30% slower; 64 gained nothing more
// (kv_store_benchmark, README).
constexpr size_t kPrefetchDistance = 32;
// A pull's distance per stage (see PullOnePass): its two stages keep about
// 2 * kPullDistance misses in flight.
constexpr size_t kPullDistance = 32;
// The same for rows kept in their index slot: one miss per key, not two.
constexpr size_t kPullSlotDistance = 32;

// dst = src for one row of n values.
template <typename Val>
inline void CopyRow(Val* dst, const Val* src, size_t n) {
  if (n == 1) {
    std::memcpy(dst, src, sizeof(Val));  // src may be an index slot's bits
  } else {
    std::memcpy(dst, src, n * sizeof(Val));
  }
}

// Prefetches the first `lines` cache lines of the row at `row`.
ABSL_ATTRIBUTE_ALWAYS_INLINE inline void PrefetchRowLines(const void* row,
                                                          size_t lines) {
  const char* p = static_cast<const char*>(row);
  for (size_t l = 0; l < lines; ++l) PrefetchLine(p + 64 * l);
}

// Copies the row of key i to its place in `out` (kWidth: the rows' width,
// or 0 for `width`).
template <size_t kWidth, typename Val>
ABSL_ATTRIBUTE_ALWAYS_INLINE inline void CopyOut(Val* out, size_t i,
                                                 const Val* row,
                                                 uint32_t width) {
  if constexpr (kWidth == 1) {
    std::memcpy(out + i, row, sizeof(Val));  // maybe a slot's bits
  } else if constexpr (kWidth != 0) {
    std::memcpy(out + i * kWidth, row, kWidth * sizeof(Val));
  } else {
    CopyRow(out + i * width, row, width);
  }
}

// The walk of a one-pass push or pull over `n` keys, `kD` keys ahead:
// resolve(j) finds key j's row (and prefetches ahead), step(i) uses key
// i's, before its ring entry is reused by resolve(i + kD). Both return
// false to stop the walk, which then returns false.
template <size_t kD, typename Resolve, typename Step>
ABSL_ATTRIBUTE_ALWAYS_INLINE inline bool WalkAhead(size_t n, Resolve&& resolve,
                                                   Step&& step) {
  const size_t head = std::min(n, kD);
  for (size_t j = 0; j < head; ++j) {
    if (!resolve(j)) return false;
  }
  size_t i = 0;
  for (; i + kD < n; ++i) {
    if (!step(i)) return false;
    if (!resolve(i + kD)) return false;
  }
  for (; i < n; ++i) {
    if (!step(i)) return false;
  }
  return true;
}

// The index homes of a batch of keys, each computed once: Next(i) returns
// key i's and prefetches the slot of key i + kPrefetchDistance.
class HomeRing {
 public:
  HomeRing(const RowIndex& index, absl::Span<const Key> keys)
      : index_(index), keys_(keys) {
    for (size_t i = 0; i < kPrefetchDistance && i < keys.size(); ++i) {
      Fill(i);
    }
  }
  size_t Next(size_t i) {
    const size_t home = ring_[i % kPrefetchDistance];
    if (i + kPrefetchDistance < keys_.size()) Fill(i + kPrefetchDistance);
    return home;
  }

 private:
  void Fill(size_t i) {
    const size_t home = index_.Home(keys_[i]);
    index_.Prefetch(home);
    ring_[i % kPrefetchDistance] = home;
  }

  const RowIndex& index_;
  const absl::Span<const Key> keys_;
  size_t ring_[kPrefetchDistance];
};

// Keys of a walk whose rows were found a stage late (past a full home
// bucket) and only prefetched then: each is finished (copied out, or
// written) at the next Add at least kD keys later, or at the walk's final
// FinishBefore, in the order queued, so that the walk never waits on such
// a row. Keys are added in increasing order; once those a window back are
// finished, fewer than kD remain, so the ring never overflows.
template <size_t kD, typename Row>
class LateRows {
 public:
  // Queues key i's row, first finishing the rows of keys before i + 1 - kD.
  // finish(key, row) does the work.
  template <typename Finish>
  void Add(size_t i, Row row, const Finish& finish) {
    FinishBefore(i + 1 > kD ? i + 1 - kD : 0, finish);
    DCHECK_LT(end_ - begin_, kD);
    keys_[end_ % kD] = i;
    rows_[end_ % kD] = row;
    ++end_;
  }
  // Finishes the rows queued for keys before `before`.
  template <typename Finish>
  void FinishBefore(size_t before, const Finish& finish) {
    while (begin_ != end_ && keys_[begin_ % kD] < before) {
      finish(keys_[begin_ % kD], rows_[begin_ % kD]);
      ++begin_;
    }
  }

 private:
  size_t keys_[kD];
  Row rows_[kD];
  size_t begin_ = 0;
  size_t end_ = 0;
};

}  // namespace kv_store_internal

// The slab rows of one width. A slab holds the fewest rows (a power of
// two) that fill 2 MiB, one huge page; slabs start 2 MiB-aligned, so a
// 64-byte row is one cache line.
template <typename Val>
struct KVStore<Val>::Pool {
  explicit Pool(uint32_t w) : width(w) {
    while ((size_t{1} << slab_shift) * w * sizeof(Val) <
           HugePageMemory::kHugePageBytes) {
      ++slab_shift;
    }
  }
  size_t slab_bytes() const {
    return (size_t{1} << slab_shift) * width * sizeof(Val);
  }
  // Row ids with memory: 0 .. capacity() - 1.
  uint64_t capacity() const { return uint64_t{slabs.size()} << slab_shift; }
  Val* Row(uint32_t id) const {
    const size_t in_slab = id & ((uint32_t{1} << slab_shift) - 1);
    return static_cast<Val*>(slabs[id >> slab_shift].data()) + in_slab * width;
  }

  const uint32_t width;
  int slab_shift = 0;  // log2 of rows per slab
  std::vector<HugePageMemory> slabs;
  uint64_t used = 0;  // row ids handed out: 0 .. used - 1
  std::vector<uint32_t> free_rows;
};

template <typename Val>
inline const typename KVStore<Val>::Pool* KVStore<Val>::FindPool(
    uint32_t width) const {
  if (ABSL_PREDICT_TRUE(last_pool_ != nullptr && last_pool_->width == width)) {
    return last_pool_;
  }
  return FindOtherPool(width);
}

template <typename Val>
inline const Val* KVStore<Val>::RowData(const RowIndex::Slot& slot) const {
  if (IsInline(slot.width)) return reinterpret_cast<const Val*>(&slot.row);
  if (IsLarge(slot.width)) return large_rows_[slot.row].data();
  return FindPool(slot.width)->Row(slot.row);
}

}  // namespace petrel

#endif  // PETREL_STORE_KV_STORE_INTERNAL_H_
