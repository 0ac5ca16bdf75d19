#include "store/kv_store.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "absl/base/attributes.h"
#include "absl/base/optimization.h"
#include "absl/strings/str_cat.h"
#include "glog/logging.h"

#include "store/kv_store_internal.h"

namespace petrel {
namespace {

using kv_store_internal::CopyRow;
using kv_store_internal::HomeRing;
using kv_store_internal::kPrefetchDistance;
using kv_store_internal::LateRows;
using kv_store_internal::WalkAhead;

// out[i] = a[i] + b[i]; `out` may be `a`. Written with 32-byte vectors
// because -O2 does not vectorize the plain loop (it would need an
// epilogue), and summing a pushed array was most of the server's CPU time
// at 1 MiB per push.
template <typename Val>
inline __attribute__((always_inline)) void AddVectors(const Val* a,
                                                      const Val* b, Val* out,
                                                      size_t n) {
  typedef Val Vec __attribute__((vector_size(32)));
  constexpr size_t kLanes = sizeof(Vec) / sizeof(Val);
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    Vec x, y;
    std::memcpy(&x, a + i, sizeof(Vec));  // unaligned loads and stores
    std::memcpy(&y, b + i, sizeof(Vec));
    x += y;
    std::memcpy(out + i, &x, sizeof(Vec));
  }
  for (; i < n; ++i) out[i] = a[i] + b[i];
}

// An AVX2 and a default (SSE2) version of AddTo for each type, chosen when
// the program loads: AVX2 sums 1 MiB in about half the time, which a 1 MiB
// push with one request in flight shows on 2 cores. A macro because clang
// takes target_clones on no template (and a target("avx2") template picked
// by a run-time check came out no faster than SSE2 with GCC 12).
// No clones under ThreadSanitizer: the loader runs the clones' resolver
// before TSan's runtime starts, and TSan's instrumentation of it crashes.
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define PETREL_ADD_TO_CLONES
#endif
#endif
#ifndef PETREL_ADD_TO_CLONES
#define PETREL_ADD_TO_CLONES __attribute__((target_clones("avx2", "default")))
#endif
#define PETREL_DEFINE_ADD_TO(Val)                                       \
  PETREL_ADD_TO_CLONES void AddTo(const Val* a, const Val* b, Val* out, \
                                  size_t n) {                           \
    AddVectors(a, b, out, n);                                           \
  }
PETREL_DEFINE_ADD_TO(float)
PETREL_DEFINE_ADD_TO(double)
PETREL_DEFINE_ADD_TO(int32_t)
PETREL_DEFINE_ADD_TO(int64_t)
#undef PETREL_DEFINE_ADD_TO
#undef PETREL_ADD_TO_CLONES

// dst += src for one row: short rows inline (a call through the
// target_clones resolver costs as much as summing 16 floats).
template <typename Val>
inline void AddRow(Val* dst, const Val* src, size_t n) {
  if (n == 1) {  // dst may be an index slot's bits: no typed access
    Val v;
    std::memcpy(&v, dst, sizeof(Val));
    v += *src;
    std::memcpy(dst, &v, sizeof(Val));
  } else if (n * sizeof(Val) <= 256) {
    AddVectors(dst, src, dst, n);
  } else {
    AddTo(dst, src, dst, n);
  }
}

// dst += src for a row of kWidth values, in 16-byte vectors (AddVectors
// with a constant n trips GCC's loop warnings on its scalar tail).
template <size_t kWidth, typename Val>
inline void AddFixed(Val* dst, const Val* src) {
  typedef Val Vec __attribute__((vector_size(16)));
  static_assert(kWidth * sizeof(Val) % sizeof(Vec) == 0);
#pragma GCC unroll 16
  for (size_t b = 0; b < kWidth * sizeof(Val); b += sizeof(Vec)) {
    Vec x, y;
    std::memcpy(&x, reinterpret_cast<char*>(dst) + b, sizeof(Vec));
    std::memcpy(&y, reinterpret_cast<const char*>(src) + b, sizeof(Vec));
    x += y;
    std::memcpy(reinterpret_cast<char*>(dst) + b, &x, sizeof(Vec));
  }
}

// Row ids handed out per pool are uint32; ids stop one short of the top.
constexpr uint64_t kMaxRowsPerPool = UINT32_MAX;

absl::Status NoRowIds(uint32_t width) {
  return absl::ResourceExhaustedError(
      absl::StrCat("no row ids left for rows of ", width, " values"));
}

// A step of the prepared push, one word per key: 0 = nothing to write;
// otherwise bit 0 says copy (not add) and bit 1 a large row, whose id is
// in bits 2 and up; without bit 1 the word is the slab row's address.
constexpr uintptr_t kCopyBit = 1;
constexpr uintptr_t kLargeBit = 2;

// Sums the `width` values at `src` into the row `step` points to (with
// kCopyBit: copies them there); kWidth: the rows' width, or 0 for `width`.
template <size_t kWidth, typename Val>
ABSL_ATTRIBUTE_ALWAYS_INLINE inline void WriteStep(uintptr_t step,
                                                   const Val* src,
                                                   uint32_t width) {
  Val* row = reinterpret_cast<Val*>(step & ~kCopyBit);
  if constexpr (kWidth == 1) {
    // memcpy: `row` may be an index slot's bits.
    Val v;
    std::memcpy(&v, row, sizeof(Val));
    v = (step & kCopyBit) ? *src : v + *src;
    std::memcpy(row, &v, sizeof(Val));
  } else if constexpr (kWidth != 0) {
    if (step & kCopyBit) {
      std::memcpy(row, src, kWidth * sizeof(Val));
    } else {
      AddFixed<kWidth>(row, src);
    }
  } else if (step & kCopyBit) {
    CopyRow(row, src, width);
  } else {
    AddRow(row, src, width);
  }
}

}  // namespace

template <typename Val>
KVStore<Val>::KVStore(Mode mode) : mode_(mode) {
  static_assert(alignof(Val) >= 4, "steps keep two tag bits in row addresses");
}

template <typename Val>
KVStore<Val>::~KVStore() = default;

template <typename Val>
inline typename KVStore<Val>::Pool* KVStore<Val>::PoolFor(uint32_t width) {
  if (ABSL_PREDICT_TRUE(last_pool_ != nullptr && last_pool_->width == width)) {
    return const_cast<Pool*>(last_pool_);
  }
  return NewPoolFor(width);
}

template <typename Val>
typename KVStore<Val>::Pool* KVStore<Val>::NewPoolFor(uint32_t width) {
  Pool*& pool = pool_of_width_[width];
  if (pool == nullptr) {
    pools_.push_back(std::make_unique<Pool>(width));
    pool = pools_.back().get();
  }
  last_pool_ = pool;
  return pool;
}

template <typename Val>
const typename KVStore<Val>::Pool* KVStore<Val>::FindOtherPool(
    uint32_t width) const {
  auto it = pool_of_width_.find(width);
  DCHECK(it != pool_of_width_.end());
  last_pool_ = it->second;
  return last_pool_;
}

template <typename Val>
inline uintptr_t KVStore<Val>::StepFor(RowIndex::Slot& slot, bool copy) {
  const uintptr_t copy_bit = copy ? kCopyBit : 0;
  if (IsInline(slot.width)) {  // 4-byte aligned: the tag bits are free
    return reinterpret_cast<uintptr_t>(&slot.row) | copy_bit;
  }
  if (IsLarge(slot.width)) {
    return (static_cast<uintptr_t>(slot.row) << 2) | kLargeBit | copy_bit;
  }
  return reinterpret_cast<uintptr_t>(PoolFor(slot.width)->Row(slot.row)) |
         copy_bit;
}

template <typename Val>
absl::Status KVStore<Val>::NewRow(uint32_t width, bool zero, uint32_t* row) {
  if (IsInline(width)) {
    *row = 0;  // the value's bits, in the slot: zero either way
    return absl::OkStatus();
  }
  if (IsLarge(width)) {
    if (free_large_rows_.empty()) {
      if (large_rows_.size() >= kMaxRowsPerPool) return NoRowIds(width);
      large_rows_.emplace_back();
      free_large_rows_.push_back(static_cast<uint32_t>(large_rows_.size() - 1));
    }
    *row = free_large_rows_.back();
    free_large_rows_.pop_back();
    large_rows_[*row] = zero ? SArray<Val>(width, Val{0}) : SArray<Val>(width);
    return absl::OkStatus();
  }
  Pool* pool = PoolFor(width);
  if (!pool->free_rows.empty()) {
    *row = pool->free_rows.back();
    pool->free_rows.pop_back();
  } else {
    if (pool->used >= kMaxRowsPerPool) return NoRowIds(width);
    if (pool->used == pool->capacity()) {
      absl::Status status = AddSlab(pool);
      if (!status.ok()) return status;
    }
    *row = static_cast<uint32_t>(pool->used++);
  }
  if (zero) std::fill_n(pool->Row(*row), width, Val{0});
  return absl::OkStatus();
}

template <typename Val>
absl::Status KVStore<Val>::AddSlab(Pool* pool) {
  // Huge pages from the second slab on: a pool of a few rows commits only
  // the small pages it touches.
  absl::StatusOr<HugePageMemory> slab =
      HugePageMemory::Map(pool->slab_bytes(), /*advise=*/!pool->slabs.empty());
  if (!slab.ok()) return slab.status();
  pool->slabs.push_back(*std::move(slab));
  return absl::OkStatus();
}

template <typename Val>
void KVStore<Val>::FreeRow(uint32_t width, uint32_t row) {
  if (width == 0 || IsInline(width)) return;
  if (IsLarge(width)) {
    large_rows_[row] = SArray<Val>();  // an answer may still hold the array
    free_large_rows_.push_back(row);
  } else {
    PoolFor(width)->free_rows.push_back(row);
  }
}

// Finds or creates the row of `key` for a push of `width` values and sets
// *step to what CommitPush does with it. The common case (a row of that
// width) inline, the rest in ResolveOther.
template <typename Val>
ABSL_ATTRIBUTE_ALWAYS_INLINE inline absl::Status KVStore<Val>::Resolve(
    Key key, size_t home, uint32_t width, bool zero_new, uintptr_t* step) {
  bool inserted;
  RowIndex::Slot* slot = index_.FindOrInsert(key, home, &inserted);
  if (ABSL_PREDICT_TRUE(slot->width == width && width != 0)) {
    *step = StepFor(*slot, mode_ == Mode::kAssign);
    return absl::OkStatus();
  }
  return ResolveOther(slot, width, zero_new, step);
}

template <typename Val>
absl::Status KVStore<Val>::ResolveOther(RowIndex::Slot* slot, uint32_t width,
                                        bool zero_new, uintptr_t* step) {
  if (slot->width != 0 && mode_ == Mode::kSum) {
    return absl::InvalidArgumentError(
        absl::StrCat("key ", slot->key, " has ", slot->width,
                     " values in the store, push has ", width,
                     " (a sum needs the same width)"));
  }
  // A new row, or (kAssign) a row changing width. The old row is freed by
  // CommitPush, after every step that may still write it.
  uint32_t row = 0;
  if (width != 0) {
    absl::Status status = NewRow(width, zero_new, &row);
    if (!status.ok()) return status;
  }
  undo_.push_back(Undo{slot, slot->width, slot->row});
  if (slot->width == 0) ++num_rows_;
  if (width == 0) --num_rows_;
  slot->width = width;
  slot->row = row;
  *step = width == 0 ? 0 : StepFor(*slot, /*copy=*/true);
  return absl::OkStatus();
}

template <typename Val>
void KVStore<Val>::Rollback() {
  for (size_t i = undo_.size(); i-- > 0;) {
    const Undo& u = undo_[i];
    FreeRow(u.slot->width, u.slot->row);
    if (u.slot->width != 0) --num_rows_;
    if (u.width != 0) ++num_rows_;
    u.slot->width = u.width;
    u.slot->row = u.row;
  }
  undo_.clear();
}

template <typename Val>
absl::Status KVStore<Val>::PreparePush(absl::Span<const Key> keys,
                                       absl::Span<const Val> vals,
                                       absl::Span<const int> lens) {
  DCHECK(!prepared_);
  const size_t n = keys.size();
  size_t width = 0;
  if (lens.empty()) {
    if ((n == 0 && !vals.empty()) || (n != 0 && vals.size() % n != 0)) {
      return absl::InvalidArgumentError(absl::StrCat(
          vals.size(), " values do not divide evenly over ", n, " keys"));
    }
    width = n == 0 ? 0 : vals.size() / n;
    if (width > kMaxWidth) {
      return absl::InvalidArgumentError(
          absl::StrCat(width, " values per key, more than ", kMaxWidth));
    }
  } else {
    // Checked before any row is made, so a bad length allocates nothing.
    if (lens.size() != n) {
      return absl::InvalidArgumentError(
          absl::StrCat(lens.size(), " lens for ", n, " keys"));
    }
    uint64_t total = 0;
    for (size_t i = 0; i < n; ++i) {
      if (lens[i] < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("negative length ", lens[i], " for key ", keys[i]));
      }
      total += static_cast<uint64_t>(lens[i]);
    }
    if (total != vals.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "lens sum to ", total, " but ", vals.size(), " values follow"));
    }
  }
  one_pass_ = false;
  if (one_pass_enabled_ && lens.empty() && width != 0 && !IsLarge(width)) {
    absl::StatusOr<bool> reserved =
        ReserveOnePass(n, static_cast<uint32_t>(width));
    if (!reserved.ok()) return reserved.status();
    if (*reserved) {
      prepared_ = true;
      one_pass_ = true;
      keys_ = keys;
      vals_ = vals;
      lens_ = {};
      width_ = width;
      slice_offset_ = 0;
      return absl::OkStatus();
    }
  }
  // Slot pointers stay put below.
  absl::Status room = index_.Reserve(index_.size() + n);
  if (!room.ok()) return room;
  steps_.resize(n);
  undo_.clear();
  HomeRing homes(index_, keys);
  for (size_t i = 0; i < n; ++i) {
    const size_t home = homes.Next(i);
    const size_t len = lens.empty() ? width : static_cast<size_t>(lens[i]);
    absl::Status status =
        Resolve(keys[i], home, static_cast<uint32_t>(len), false, &steps_[i]);
    if (!status.ok()) {
      Rollback();
      return status;
    }
  }
  prepared_ = true;
  vals_ = vals;
  lens_ = lens;
  width_ = width;
  slice_offset_ = 0;
  return absl::OkStatus();
}

template <typename Val>
absl::Status KVStore<Val>::PreparePushSlice(Key key, size_t offset,
                                            size_t total,
                                            absl::Span<const Val> vals) {
  DCHECK(!prepared_);
  if (total == 0 || total > kMaxWidth || offset > total ||
      vals.size() > total - offset) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad key slice: values ", offset, "..",
                     offset + vals.size(), " of ", total, " for key ", key));
  }
  absl::Status room = index_.Reserve(index_.size() + 1);
  if (!room.ok()) return room;
  one_pass_ = false;
  steps_.resize(1);
  undo_.clear();
  absl::Status status =
      Resolve(key, index_.Home(key), static_cast<uint32_t>(total),
              /*zero_new=*/true, &steps_[0]);
  if (!status.ok()) {
    Rollback();
    return status;
  }
  if (mode_ == Mode::kSum) steps_[0] &= ~kCopyBit;  // add onto the zeros
  prepared_ = true;
  vals_ = vals;
  lens_ = {};
  width_ = vals.size();
  slice_offset_ = offset;
  return absl::OkStatus();
}

template <typename Val>
void KVStore<Val>::ApplyLarge(uint32_t id, const Val* src, size_t len,
                              bool copy) {
  SArray<Val>& row = large_rows_[id];
  const bool whole = slice_offset_ == 0 && len == row.size();
  if (row.buffer().owner().use_count() > 1) {
    // A pull answer still being sent shares this row (see Pull): write a
    // new row instead of changing bytes on their way out.
    if (whole && copy) {
      row = SArray<Val>::CopyOf(src, len);
      return;
    }
    if (whole) {
      SArray<Val> sum(len);
      AddTo(row.data(), src, sum.data(), len);
      row = std::move(sum);
      return;
    }
    row = SArray<Val>::CopyOf(row.data(), row.size());
  } else {
    // Only this store adds references, so a count of 1 stays 1; the fence
    // orders the sender's last reads of the bytes before our writes.
    std::atomic_thread_fence(std::memory_order_acquire);
  }
  Val* dst = row.data() + slice_offset_;
  if (copy) {
    std::memcpy(dst, src, len * sizeof(Val));
  } else {
    AddTo(dst, src, dst, len);
  }
}

template <typename Val>
absl::StatusOr<bool> KVStore<Val>::ReserveOnePass(size_t n, uint32_t width) {
  if (mode_ == Mode::kSum) {
    // Any stored row of another width could reject the push.
    for (const auto& pool : pools_) {
      if (pool->width != width && pool->used != pool->free_rows.size()) {
        return false;
      }
    }
    if (large_rows_.size() != free_large_rows_.size()) return false;
    if (!IsInline(width) && InlineRows() != 0) return false;
  }
  absl::Status room = index_.Reserve(index_.size() + n);
  if (!room.ok()) return room;
  if (IsInline(width)) return true;  // the rows are the slots
  Pool* pool = PoolFor(width);
  if (n <= pool->free_rows.size()) return true;
  const uint64_t need = pool->used + (n - pool->free_rows.size());
  // Out of ids or memory for n new rows: the two passes create only the
  // rows the push needs, and say so when they cannot.
  if (need > kMaxRowsPerPool) return false;
  while (pool->capacity() < need) {
    if (!AddSlab(pool).ok()) return false;
  }
  return true;
}

template <typename Val>
template <bool kInSlot>
ABSL_ATTRIBUTE_ALWAYS_INLINE inline uintptr_t KVStore<Val>::StepOf(
    RowIndex::Slot* slot, uint32_t width, Pool* pool, uintptr_t hit_bits) {
  if (ABSL_PREDICT_TRUE(slot->width == width)) {
    return kInSlot
               ? reinterpret_cast<uintptr_t>(&slot->row) | hit_bits
               : reinterpret_cast<uintptr_t>(pool->Row(slot->row)) | hit_bits;
  }
  DCHECK(slot->width == 0 || mode_ == Mode::kAssign);
  uint32_t row = 0;
  if (kInSlot) {
    // The value goes in the slot (copied by WriteStep).
  } else if (pool->free_rows.empty()) {
    row = static_cast<uint32_t>(pool->used++);
  } else {
    row = pool->free_rows.back();
    pool->free_rows.pop_back();
  }
  if (slot->width == 0) {
    ++num_rows_;
  } else {
    FreeRow(slot->width, slot->row);  // kAssign: another width
  }
  slot->width = width;
  slot->row = row;
  return kInSlot ? reinterpret_cast<uintptr_t>(&slot->row) | kCopyBit
                 : reinterpret_cast<uintptr_t>(pool->Row(row)) | kCopyBit;
}

template <typename Val>
template <size_t kWidth>
void KVStore<Val>::ApplyOnePass() {
  const size_t n = keys_.size();
  const uint32_t width = kWidth != 0 ? kWidth : static_cast<uint32_t>(width_);
  // CommitPush sends width 1 here with kWidth 1 only.
  constexpr bool in_slot = kWidth == 1 && kInlineOne;
  Pool* const pool = in_slot ? nullptr : PoolFor(width);
  const uintptr_t hit_bits = mode_ == Mode::kAssign ? kCopyBit : 0;
  // Lines of a row to prefetch (the first four).
  const size_t row_lines = std::min<size_t>(4, (width * sizeof(Val) + 63) / 64);
  const Val* const vals = vals_.data();
  HomeRing homes(index_, keys_);
  // The rows of keys i .. i + kPrefetchDistance - 1, as steps; 0 for a key
  // not in its home bucket, looked up from probe[] when it is applied.
  uintptr_t ring[kPrefetchDistance];
  size_t probe[kPrefetchDistance];
  auto step_of = [&](RowIndex::Slot* slot) ABSL_ATTRIBUTE_ALWAYS_INLINE {
    return StepOf<in_slot>(slot, width, pool, hit_bits);
  };
  // Key j's row, its home bucket prefetched kPrefetchDistance keys ago and
  // its row prefetched now. A key not in its home bucket, which is full
  // (about 7% of the keys of an index 60% full), has the next bucket
  // prefetched now and is looked up when applied; a later copy of the key
  // in the window is deferred as well, so its copies keep their order.
  auto resolve = [&](size_t j) ABSL_ATTRIBUTE_ALWAYS_INLINE {
    const size_t home = homes.Next(j);
    bool inserted;
    RowIndex::Slot* slot =
        index_.FindOrInsertInBucket(keys_[j], home, &inserted);
    if (ABSL_PREDICT_FALSE(slot == nullptr)) {
      probe[j % kPrefetchDistance] = index_.NextBucket(home);
      index_.Prefetch(probe[j % kPrefetchDistance]);
      ring[j % kPrefetchDistance] = 0;
      return;
    }
    const uintptr_t step = step_of(slot);
    if constexpr (!in_slot) {  // a slot's row is in the line just read
      const char* line = reinterpret_cast<const char*>(step & ~kCopyBit);
      for (size_t l = 0; l < row_lines; ++l) PrefetchLine(line + 64 * l);
    }
    ring[j % kPrefetchDistance] = step;
  };
  auto write = [&](size_t i, uintptr_t step) ABSL_ATTRIBUTE_ALWAYS_INLINE {
    WriteStep<kWidth>(step, vals + i * width, width);
  };
  // Deferred keys with slab rows, looked up at their apply: their rows are
  // only prefetched then, so they are written a window later.
  LateRows<kPrefetchDistance, uintptr_t> late;
  auto apply = [&](size_t i) ABSL_ATTRIBUTE_ALWAYS_INLINE {
    uintptr_t step = ring[i % kPrefetchDistance];
    if (ABSL_PREDICT_FALSE(step == 0)) {
      bool inserted;
      step = step_of(index_.FindOrInsert(keys_[i], probe[i % kPrefetchDistance],
                                         &inserted));
      if constexpr (!in_slot) {
        const char* line = reinterpret_cast<const char*>(step & ~kCopyBit);
        for (size_t l = 0; l < row_lines; ++l) PrefetchLine(line + 64 * l);
        late.Add(i, step, write);
        return;
      }
    }
    write(i, step);
  };
  WalkAhead<kPrefetchDistance>(
      n,
      [&](size_t j) ABSL_ATTRIBUTE_ALWAYS_INLINE {
        resolve(j);
        return true;
      },
      [&](size_t i) ABSL_ATTRIBUTE_ALWAYS_INLINE {
        apply(i);
        return true;
      });
  late.FinishBefore(n, write);
}

template <typename Val>
void KVStore<Val>::CommitPush() {
  DCHECK(prepared_);
  prepared_ = false;
  if (one_pass_) {
    one_pass_ = false;
    switch (width_) {
      case 1:
        ApplyOnePass<1>();
        break;
      case 16:
        ApplyOnePass<16>();
        break;
      default:
        ApplyOnePass<0>();
    }
    return;
  }
  const size_t n = steps_.size();
  const Val* src = vals_.data();
  for (size_t i = 0; i < n; ++i) {
    if (i + kPrefetchDistance < n) {
      const uintptr_t ahead = steps_[i + kPrefetchDistance];
      if ((ahead & kLargeBit) == 0) {
        PrefetchLine(reinterpret_cast<const void*>(ahead & ~kCopyBit));
      }
    }
    const size_t len = lens_.empty() ? width_ : static_cast<size_t>(lens_[i]);
    const uintptr_t step = steps_[i];
    const bool copy = (step & kCopyBit) != 0;
    if (step & kLargeBit) {
      ApplyLarge(static_cast<uint32_t>(step >> 2), src, len, copy);
    } else if (step != 0) {
      Val* row = reinterpret_cast<Val*>(step & ~kCopyBit) + slice_offset_;
      if (copy) {
        CopyRow(row, src, len);
      } else {
        AddRow(row, src, len);
      }
    }
    src += len;
  }
  for (const Undo& u : undo_) FreeRow(u.width, u.row);  // replaced rows
  undo_.clear();
}

template <typename Val>
absl::Status KVStore<Val>::Push(absl::Span<const Key> keys,
                                absl::Span<const Val> vals,
                                absl::Span<const int> lens) {
  absl::Status status = PreparePush(keys, vals, lens);
  if (status.ok()) CommitPush();
  return status;
}

template <typename Val>
size_t KVStore<Val>::InlineRows() const {
  size_t elsewhere = large_rows_.size() - free_large_rows_.size();
  for (const auto& pool : pools_)
    elsewhere += pool->used - pool->free_rows.size();
  return num_rows_ - elsewhere;
}

template <typename Val>
size_t KVStore<Val>::MemoryBytes() const {
  size_t bytes = index_.MemoryBytes();
  for (const auto& pool : pools_) {
    bytes += pool->slabs.size() * pool->slab_bytes();
  }
  for (const SArray<Val>& row : large_rows_) bytes += row.size() * sizeof(Val);
  return bytes;
}

template class KVStore<float>;
template class KVStore<double>;
template class KVStore<int32_t>;
template class KVStore<int64_t>;

}  // namespace petrel
