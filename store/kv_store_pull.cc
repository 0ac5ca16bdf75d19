// KVStore's reads: pulls, Get, and Export (the rows a replacement server is
// sent: docs/failures.md, "Replacement servers"); pushes are in kv_store.cc.
#include <algorithm>
#include <atomic>
#include <cstring>

#include "absl/base/attributes.h"
#include "absl/base/optimization.h"

#include "store/kv_store.h"
#include "store/kv_store_internal.h"

namespace petrel {

using kv_store_internal::CopyOut;
using kv_store_internal::CopyRow;
using kv_store_internal::HomeRing;
using kv_store_internal::kPrefetchDistance;
using kv_store_internal::kPullDistance;
using kv_store_internal::kPullSlotDistance;
using kv_store_internal::LateRows;
using kv_store_internal::PrefetchRowLines;
using kv_store_internal::WalkAhead;

template <typename Val>
int64_t KVStore<Val>::OnlyWidth() const {
  if (large_rows_.size() != free_large_rows_.size()) return -1;
  int64_t width = InlineRows() != 0 ? 1 : 0;
  for (const auto& pool : pools_) {
    if (pool->used == pool->free_rows.size()) continue;  // no row in use
    if (width != 0) return -1;
    width = pool->width;
  }
  return width;
}

template <typename Val>
template <size_t kWidth>
bool KVStore<Val>::PullOnePass(absl::Span<const Key> keys, uint32_t width,
                               const Pool* pool, Val* out) const {
  // Rows of one 4-byte value are in the slots (PullRows sends them here
  // with kWidth 1): nothing to fetch after the bucket.
  constexpr bool in_slot = kWidth == 1 && kInlineOne;
  if constexpr (kWidth != 0) width = kWidth;
  const size_t n = keys.size();
  const size_t row_bytes = width * sizeof(Val);
  const size_t row_lines = std::min<size_t>(4, (row_bytes + 63) / 64);
  // Two stages ahead of the copy: key i + 2D's index bucket is fetched,
  // key i + D's slot is read and its row fetched, key i's row is copied.
  // A key not in its (full) home bucket has the next bucket fetched at the
  // second stage and is looked up there at the copy, so that the walk
  // never waits on an index miss; its row is then read without a prefetch.
  constexpr size_t D = in_slot ? kPullSlotDistance : kPullDistance;
  size_t homes[2 * D];
  const Val* rows[D];
  size_t probe[D];  // the bucket to go on from, when rows[] is null
  for (size_t j = 0; j < 2 * D && j < n; ++j) {
    homes[j] = index_.Home(keys[j]);
    index_.Prefetch(homes[j]);
  }
  auto row_of = [&](const RowIndex::Slot* slot) ABSL_ATTRIBUTE_ALWAYS_INLINE {
    return in_slot ? reinterpret_cast<const Val*>(&slot->row)
                   : static_cast<const Val*>(pool->Row(slot->row));
  };
  // Finds key j's row (its bucket prefetched 2D keys ago), prefetches it,
  // and fetches key j + 2D's bucket. False when key j has no row.
  auto resolve = [&](size_t j) ABSL_ATTRIBUTE_ALWAYS_INLINE {
    const size_t home = homes[j % (2 * D)];
    bool full;
    const RowIndex::Slot* slot = index_.FindInBucket(keys[j], home, &full);
    if (j + 2 * D < n) {
      const size_t ahead = index_.Home(keys[j + 2 * D]);
      index_.Prefetch(ahead);
      homes[j % (2 * D)] = ahead;
    }
    if (ABSL_PREDICT_FALSE(slot == nullptr)) {
      if (!full) return false;
      probe[j % D] = index_.NextBucket(home);
      index_.Prefetch(probe[j % D]);
      rows[j % D] = nullptr;
      return true;
    }
    if (ABSL_PREDICT_FALSE(slot->width != width)) return false;
    const Val* row = row_of(slot);
    if constexpr (!in_slot) PrefetchRowLines(row, row_lines);
    rows[j % D] = row;
    return true;
  };
  // Copies key i's row out.
  auto copy_row = [&](size_t i, const Val* row) ABSL_ATTRIBUTE_ALWAYS_INLINE {
    CopyOut<kWidth>(out, i, row, width);
  };
  // Keys looked up at the copy whose rows (not in the slot) were only
  // prefetched then: copied D keys later, so that the walk does not wait
  // on their rows either.
  LateRows<D, const Val*> late;
  // Copies key i's row out (or, for a key looked up here, queues it); false
  // when it has none.
  auto copy = [&](size_t i) ABSL_ATTRIBUTE_ALWAYS_INLINE {
    const Val* row = rows[i % D];
    if (ABSL_PREDICT_FALSE(row == nullptr)) {
      const RowIndex::Slot* slot = index_.Find(keys[i], probe[i % D]);
      if (slot == nullptr || slot->width != width) return false;
      row = row_of(slot);
      if constexpr (!in_slot) {
        PrefetchRowLines(row, row_lines);
        late.Add(i, row, copy_row);
        return true;
      }
    }
    copy_row(i, row);
    return true;
  };
  if (!WalkAhead<D>(n, resolve, copy)) return false;
  late.FinishBefore(n, copy_row);
  return true;
}

template <typename Val>
bool KVStore<Val>::PullRows(absl::Span<const Key> keys, uint32_t width,
                            const Pool* pool, Val* out) const {
  auto walk = [this, width, pool](absl::Span<const Key> part, Val* to) {
    switch (width) {
      case 1:
        return PullOnePass<1>(part, width, pool, to);
      case 16:
        return PullOnePass<16>(part, width, pool, to);
      default:
        return PullOnePass<0>(part, width, pool, to);
    }
  };
  const size_t n = keys.size();
  if (pull_pool_ == nullptr || pull_pool_->num_threads() < 2 ||
      n < kParallelPullKeys) {
    return walk(keys, out);
  }
  // Chunks of kPullChunkKeys keys or more (a few microseconds of walk
  // each), at most kMaxPullChunks: the caller starts at once while the
  // pool's threads take tens of microseconds to wake, so it walks the
  // chunks alone until they join and takes more of them; with large chunks
  // a late thread would still hold one when the caller is done.
  const size_t chunks = std::min<size_t>(kMaxPullChunks, n / kPullChunkKeys);
  std::atomic<bool> found{true};
  pull_pool_->Run(static_cast<int>(chunks), [&](int c) {
    const size_t begin = n * static_cast<size_t>(c) / chunks;
    const size_t end = n * (static_cast<size_t>(c) + 1) / chunks;
    if (!walk(keys.subspan(begin, end - begin), out + begin * width)) {
      found.store(false, std::memory_order_relaxed);
    }
  });
  return found.load(std::memory_order_relaxed);
}

template <typename Val>
KVPairs<Val> KVStore<Val>::Pull(const SArray<Key>& keys) {
  DCHECK(!prepared_);
  KVPairs<Val> out;
  out.keys = keys;
  const size_t n = keys.size();
  if (n == 1) {
    const RowIndex::Slot* slot = index_.Find(keys[0]);
    if (slot == nullptr || slot->width == 0) return out;
    // A large row is answered itself; a later push copies on write.
    out.vals = IsLarge(slot->width)
                   ? large_rows_[slot->row]
                   : SArray<Val>::CopyOf(RowData(*slot), slot->width);
    return out;
  }
  if (n == 0) return out;
  // One width stored (the common case): every key asked has a row of that
  // width, or the answer needs lens. Assume the first and look each key up
  // and copy it out in one walk; a key without a row sends the pull to the
  // two passes below (the walk wrote only the answer, which they redo).
  const int64_t only = OnlyWidth();
  if (only > 0) {
    const uint32_t width = static_cast<uint32_t>(only);
    out.vals = SArray<Val>(n * width);
    const Pool* pool = IsInline(width) ? nullptr : FindPool(width);
    if (PullRows(keys, width, pool, out.vals.data())) return out;
  }
  pulled_.resize(n);
  size_t total = 0;
  bool uniform = true;
  HomeRing homes(index_, keys);
  for (size_t i = 0; i < n; ++i) {
    const RowIndex::Slot* slot = index_.Find(keys[i], homes.Next(i));
    PulledRow& r = pulled_[i];
    if (slot == nullptr || slot->width == 0) {
      r = PulledRow{nullptr, 0};
    } else {
      r = PulledRow{RowData(*slot), slot->width};
    }
    total += r.len;
    uniform = uniform && r.len == pulled_[0].len;
  }
  if (out.vals.size() != total) out.vals = SArray<Val>(total);
  if (!uniform) out.lens = SArray<int>(n);
  Val* dst = out.vals.data();
  for (size_t i = 0; i < n; ++i) {
    if (i + kPrefetchDistance < n) {
      PrefetchLine(pulled_[i + kPrefetchDistance].data);
    }
    const PulledRow& r = pulled_[i];
    if (r.len > 0) CopyRow(dst, r.data, r.len);
    dst += r.len;
    if (!uniform) out.lens[i] = static_cast<int>(r.len);
  }
  return out;
}

template <typename Val>
std::vector<Val> KVStore<Val>::Get(Key key) const {
  const RowIndex::Slot* slot = index_.Find(key);
  if (slot == nullptr || slot->width == 0) return {};
  std::vector<Val> row(slot->width);
  std::memcpy(row.data(), RowData(*slot), slot->width * sizeof(Val));
  return row;
}

template <typename Val>
KVPairs<Val> KVStore<Val>::Export(const std::function<bool(Key)>& keep) const {
  size_t keys = 0;
  size_t vals = 0;
  index_.ForEach([&](const RowIndex::Slot& slot) {
    if (slot.width == 0 || !keep(slot.key)) return;
    ++keys;
    vals += slot.width;
  });
  KVPairs<Val> out;
  out.keys = SArray<Key>(keys);
  out.vals = SArray<Val>(vals);
  out.lens = SArray<int>(keys);
  size_t k = 0;
  size_t v = 0;
  index_.ForEach([&](const RowIndex::Slot& slot) {
    if (slot.width == 0 || !keep(slot.key)) return;
    const Val* row = RowData(slot);
    std::copy(row, row + slot.width, out.vals.data() + v);
    out.keys[k] = slot.key;
    out.lens[k] = static_cast<int>(slot.width);
    ++k;
    v += slot.width;
  });
  return out;
}

#define PETREL_INSTANTIATE_KV_STORE_PULL(Val)                        \
  template KVPairs<Val> KVStore<Val>::Pull(const SArray<Key>& keys); \
  template std::vector<Val> KVStore<Val>::Get(Key key) const;        \
  template KVPairs<Val> KVStore<Val>::Export(                        \
      const std::function<bool(Key)>& keep) const;
PETREL_INSTANTIATE_KV_STORE_PULL(float)
PETREL_INSTANTIATE_KV_STORE_PULL(double)
PETREL_INSTANTIATE_KV_STORE_PULL(int32_t)
PETREL_INSTANTIATE_KV_STORE_PULL(int64_t)
#undef PETREL_INSTANTIATE_KV_STORE_PULL

}  // namespace petrel
