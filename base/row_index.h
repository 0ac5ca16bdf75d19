// RowIndex: an open-addressing hash index, key -> (width, row id), for the
// row stores of a server: KVStore (kv/) and the training tables' shards
// (server/table.h). 16-byte slots in buckets of four (one cache line),
// probed bucket by bucket and kept at most 3/4 full. A key goes in the
// first free slot from its home bucket on; a lookup compares the four slots
// of a bucket without branching on each, so looking up a key in its home
// bucket (the common case) costs one well-predicted branch. It has no
// per-key allocation and lets a caller prefetch the slot of a key it will
// look up soon (Prefetch), which is what makes a batch of lookups run at
// memory speed rather than one cache miss at a time: the stores prefetch
// key i + D while they handle key i.
//
// A slot's `width` is the width of the key's row, 0 meaning no row (yet):
// KVStore stores the row's number of values; a Table stores its dim. Its
// `row` is the row's id in the caller's store. Keys are any uint64; a slot
// is free when its width is kFreeSlot. Nothing is ever erased: a key whose
// row went away (or was never made, when the store ran out of memory)
// keeps its slot with width 0 until Compact drops such slots.
//
// The slots live in HugePageMemory (2 MiB pages where the kernel allows):
// a lookup in a large index then costs one cache miss, not also a TLB miss.
//
// Thread safety: not thread-safe. Slot pointers stay valid until the next
// Reserve that grows the table.
#ifndef PETREL_BASE_ROW_INDEX_H_
#define PETREL_BASE_ROW_INDEX_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "glog/logging.h"

#include "base/huge_page_memory.h"

namespace petrel {

// Asks the CPU to bring the cache line at `p` into L1. Inline assembly on
// x86-64 because GCC 12 drops a __builtin_prefetch whose address goes
// through a multiplicative hash (the tree optimizers delete it), which
// left the index lookups unprefetched.
inline void PrefetchLine(const void* p) {
#if defined(__x86_64__)
  asm volatile("prefetcht0 (%0)" : : "r"(p));
#else
  __builtin_prefetch(p, 0, 3);
#endif
}

class RowIndex {
 public:
  static constexpr uint32_t kFreeSlot = UINT32_MAX;
  static constexpr size_t kBucketSlots = 4;  // Matches and Frees assume 4
  struct Slot {
    uint64_t key;
    uint32_t width;  // the width of the key's row; 0: no row; kFreeSlot: free
    uint32_t row;    // the row's id in the store (meaningless for width 0)
  };

  RowIndex() = default;
  RowIndex(const RowIndex&) = delete;
  RowIndex& operator=(const RowIndex&) = delete;

  // Where the lookup of `key` starts; a caller that prefetches a batch
  // computes it once and passes it to Prefetch and Find/FindOrInsert.
  size_t Home(uint64_t key) const {
    return Mix(key) & mask_ & ~(kBucketSlots - 1);
  }
  // Asks the CPU to fetch the cache line where a lookup starts.
  void Prefetch(size_t home) const { PrefetchLine(&slots_[home]); }

  // The slot of `key`, or null. `home` is Home(key).
  Slot* Find(uint64_t key, size_t home) const {
    for (size_t b = home;; b = (b + kBucketSlots) & mask_) {
      Slot* bucket = &slots_[b];
      const unsigned match = Matches(bucket, key);
      if (match != 0) return &bucket[__builtin_ctz(match)];
      if (Frees(bucket) != 0) return nullptr;
    }
  }
  Slot* Find(uint64_t key) const { return Find(key, Home(key)); }
  // The slot of `key`, inserted with width 0 when missing (`*inserted`
  // says which). `home` is Home(key). REQUIRES: Reserve made room for one
  // more key, should it be missing.
  Slot* FindOrInsert(uint64_t key, size_t home, bool* inserted) {
    for (size_t b = home;; b = (b + kBucketSlots) & mask_) {
      Slot* bucket = &slots_[b];
      const unsigned match = Matches(bucket, key);
      if (match != 0) {
        *inserted = false;
        return &bucket[__builtin_ctz(match)];
      }
      const unsigned frees = Frees(bucket);
      if (frees != 0) {
        DCHECK_LT(size_, max_size_) << "RowIndex::Reserve was not called";
        Slot* s = &bucket[__builtin_ctz(frees)];
        s->key = key;
        s->width = 0;
        s->row = 0;
        ++size_;
        *inserted = true;
        return s;
      }
    }
  }
  Slot* FindOrInsert(uint64_t key, bool* inserted) {
    return FindOrInsert(key, Home(key), inserted);
  }

  // One bucket of a lookup, for callers that prefetch: the slot of `key` in
  // the bucket at `bucket` (a Home or a NextBucket), or null. On null,
  // `*full` says whether the key may still be in a later bucket (this one
  // has no free slot): the caller may then prefetch NextBucket(bucket) and
  // go on with Find or FindOrInsert from there later, rather than stall on
  // a miss now (about 7% of the keys of an index 60% full).
  Slot* FindInBucket(uint64_t key, size_t bucket, bool* full) const {
    Slot* b = &slots_[bucket];
    const unsigned match = Matches(b, key);
    if (match != 0) {
      *full = false;
      return &b[__builtin_ctz(match)];
    }
    *full = Frees(b) == 0;
    return nullptr;
  }
  // As FindInBucket, inserting the key with width 0 in the bucket's first
  // free slot when it is missing and there is one (`*inserted` says so).
  // REQUIRES: as FindOrInsert.
  Slot* FindOrInsertInBucket(uint64_t key, size_t bucket, bool* inserted) {
    Slot* b = &slots_[bucket];
    *inserted = false;
    const unsigned match = Matches(b, key);
    if (match != 0) return &b[__builtin_ctz(match)];
    const unsigned frees = Frees(b);
    if (frees == 0) return nullptr;
    DCHECK_LT(size_, max_size_) << "RowIndex::Reserve was not called";
    Slot* s = &b[__builtin_ctz(frees)];
    s->key = key;
    s->width = 0;
    s->row = 0;
    ++size_;
    *inserted = true;
    return s;
  }
  // The bucket probed after `bucket`.
  size_t NextBucket(size_t bucket) const {
    return (bucket + kBucketSlots) & mask_;
  }

  // Makes room for `n` keys in all, so that inserting up to that many moves
  // no slot. ResourceExhausted, with the index unchanged, when memory for a
  // larger table cannot be mapped. Inline and cheap when there is room, so
  // a caller may reserve one key before each FindOrInsert.
  absl::Status Reserve(size_t n) {
    if (n <= max_size_ && slots_ != empty_) return absl::OkStatus();
    return Grow(n);
  }

  // Rebuilds the index at its current capacity without the keys of width 0
  // (the keys whose rows were evicted): a store that evicts rows calls it
  // when the index is full, so its size stays bounded by the rows it holds.
  // Maps a new table before the old one goes (twice the index's memory for
  // the moment); ResourceExhausted, index unchanged, when it cannot.
  absl::Status Compact() {
    return slots_ == empty_ ? absl::OkStatus()
                            : Rehash(mask_ + 1, /*drop_empty=*/true);
  }

  // Rebuilds the index at `capacity` slots (a power of two, at least 16)
  // without the keys of width 0, like Compact: a store whose memory cap
  // fell shrinks its index with it. REQUIRES: the keys of width > 0 fit in
  // 3/4 of `capacity`. ResourceExhausted, index unchanged, when the new
  // table cannot be mapped.
  absl::Status Shrink(size_t capacity) {
    return Rehash(capacity, /*drop_empty=*/true);
  }

  // Calls fn(slot) for every key's slot (width 0 included), in no
  // particular order.
  template <typename Fn>
  void ForEach(const Fn& fn) const {
    for (size_t i = 0; slots_ != empty_ && i <= mask_; ++i) {
      if (slots_[i].width != kFreeSlot) fn(static_cast<const Slot&>(slots_[i]));
    }
  }

  // Keys in the index (including those with width 0).
  size_t size() const { return size_; }
  size_t capacity() const { return mask_ + 1; }
  // Keys the index holds before Reserve must grow it (3/4 of capacity()).
  size_t max_size() const { return max_size_; }
  size_t MemoryBytes() const { return memory_.size(); }

 private:
  // splitmix64's finalizer: sequential and strided keys spread evenly.
  static uint64_t Mix(uint64_t x) {
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
  }
  // Bit j set: slot j of the bucket holds `key`. `&`, not `&&`, and no
  // loop: a branch per slot on loaded data would mispredict and stall the
  // lookups that follow.
  static unsigned Matches(const Slot* b, uint64_t key) {
    return Match(b[0], key) | Match(b[1], key) << 1 | Match(b[2], key) << 2 |
           Match(b[3], key) << 3;
  }
  static unsigned Match(const Slot& s, uint64_t key) {
    return static_cast<unsigned>(s.key == key) &
           static_cast<unsigned>(s.width != kFreeSlot);
  }
  // Bit j set: slot j of the bucket is free.
  static unsigned Frees(const Slot* b) {
    return static_cast<unsigned>(b[0].width == kFreeSlot) |
           static_cast<unsigned>(b[1].width == kFreeSlot) << 1 |
           static_cast<unsigned>(b[2].width == kFreeSlot) << 2 |
           static_cast<unsigned>(b[3].width == kFreeSlot) << 3;
  }
  absl::Status Grow(size_t n);
  absl::Status Rehash(size_t capacity, bool drop_empty = false);

  HugePageMemory memory_;
  // The table before the first Reserve: one free bucket.
  Slot empty_[kBucketSlots] = {{0, kFreeSlot, 0},
                               {0, kFreeSlot, 0},
                               {0, kFreeSlot, 0},
                               {0, kFreeSlot, 0}};
  Slot* slots_ = empty_;            // in memory_ after the first Reserve
  size_t mask_ = kBucketSlots - 1;  // capacity - 1 (a power of two)
  size_t size_ = 0;                 // slots in use
  size_t max_size_ = 0;             // 3/4 of the capacity
};

}  // namespace petrel

#endif  // PETREL_BASE_ROW_INDEX_H_
