// RowIndex: a sparse table shard's hash index, key -> row number. Open
// addressing with linear probing over 16-byte slots that hold the key and
// its row together, so a lookup touches one cache line (absl's
// flat_hash_map keeps control bytes and slots apart: two lines, two misses
// on a big table). Prefetch lets a caller start loading a key's slot many
// keys ahead of its lookup.
//
// The slot array doubles at half load; it is a PageBuffer (huge pages when
// large).
//
// Thread safety: not thread-safe; one writer, no concurrent readers.
#ifndef PETREL_SERVER_ROW_INDEX_H_
#define PETREL_SERVER_ROW_INDEX_H_

#include <cstddef>
#include <cstdint>
#include <limits>

#include "server/page_buffer.h"

namespace petrel {

class RowIndex {
 public:
  static constexpr uint32_t kNoRow = std::numeric_limits<uint32_t>::max();

  RowIndex() = default;
  RowIndex(RowIndex&& other) noexcept;
  RowIndex& operator=(RowIndex&& other) noexcept;
  RowIndex(const RowIndex&) = delete;
  RowIndex& operator=(const RowIndex&) = delete;

  // The row of `key`, or kNoRow.
  uint32_t Find(uint64_t key) const {
    if (slots_ == nullptr) return kNoRow;
    for (size_t pos = Home(key);; pos = (pos + 1) & mask_) {
      const Slot& s = slots_[pos];
      if (s.row == kNoRow) return kNoRow;
      if (s.key == key) return s.row;
    }
  }
  // The row of `key`; when missing, inserts it with row number size() and
  // sets *inserted. At most kNoRow - 1 keys.
  uint32_t FindOrInsert(uint64_t key, bool* inserted);
  // Starts loading the slot a lookup of `key` probes first.
  void Prefetch(uint64_t key) const {
    if (slots_ != nullptr) __builtin_prefetch(&slots_[Home(key)], 0, 3);
  }

  size_t size() const { return size_; }
  // Bytes held by the slot array.
  size_t MemoryBytes() const { return buffer_.size(); }
  // Calls fn(key, row) for every key, in no particular order.
  template <typename Fn>
  void ForEach(const Fn& fn) const {
    for (size_t i = 0; slots_ != nullptr && i <= mask_; ++i) {
      if (slots_[i].row != kNoRow) fn(slots_[i].key, slots_[i].row);
    }
  }

 private:
  struct Slot {
    uint64_t key;
    uint32_t row;  // kNoRow: empty
    uint32_t unused;
  };

  // The top bits of MurmurHash3's 64-bit finalizer: a mix of every key bit,
  // and a different function from the HashKey that picks the server and
  // the shard, so a shard's keys still spread over all of its slots.
  size_t Home(uint64_t key) const {
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdull;
    key ^= key >> 33;
    key *= 0xc4ceb9fe1a85ec53ull;
    key ^= key >> 33;
    return static_cast<size_t>(key >> shift_);
  }
  void Grow();

  PageBuffer buffer_;
  Slot* slots_ = nullptr;  // in buffer_
  size_t mask_ = 0;        // capacity - 1
  int shift_ = 64;         // 64 - log2(capacity)
  size_t size_ = 0;
};

}  // namespace petrel

#endif  // PETREL_SERVER_ROW_INDEX_H_
