// Table's bulk loads (table.h: Reserve, SetRows), the path checkpoint
// restores take: the index grown once, lookups prefetched, rows appended to
// slabs populated up front. The row store itself is table.cc.
#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"

#include "server/table.h"
#include "server/table_key_visit.h"

namespace petrel {
namespace {

// How many keys ahead SetRows prefetches a key's index slot (its rows are
// written in order and need none).
constexpr size_t kSetPrefetchDistance = 16;

}  // namespace

absl::Status Table::Reserve(size_t rows) {
  if (options_.dense) return absl::OkStatus();
  // Shards get keys by hash: a little more than an even share each.
  const size_t per_shard =
      rows / shards_.size() + rows / shards_.size() / 20 + 64;
  for (Shard& shard : shards_) {
    size_t want = shard.index.size() + per_shard;
    // Under a cap, never past the index the cap planned.
    if (index_capacity_ != SIZE_MAX) {
      want = std::min(want, index_capacity_ / 4 * 3);
    }
    absl::Status s = shard.index.Reserve(want);
    if (!s.ok()) {
      return absl::ResourceExhaustedError(
          absl::StrCat("table ", options_.id, ": no memory to index ", rows,
                       " more rows: ", s.message()));
    }
  }
  return absl::OkStatus();
}

absl::Status Table::SetRows(absl::Span<const uint64_t> keys,
                            absl::Span<const float> values, int value_stride,
                            bool with_state, const ParallelRunner& runner) {
  const int dim = options_.dim;
  if (value_stride < dim || (with_state && value_stride != stride_) ||
      values.size() != keys.size() * static_cast<size_t>(value_stride)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "setting ", keys.size(), " rows of table ", options_.id, " (dim ", dim,
        ", stride ", stride_, ") from ", values.size(), " values of stride ",
        value_stride, with_state ? " with" : " without", " optimizer state"));
  }
  absl::Status s = CheckKeys(keys);
  if (!s.ok()) return s;
  ++seq_;
  const float* src = values.data();
  std::atomic<bool> out_of_memory{false};
  if (track_) {
    // Rows that carry a key and a stamp, under a cap: one at a time.
    ForEachKey(keys, runner, [&](Shard& shard, size_t i) {
      bool added;
      float* row = FindOrAddRow(shard, keys[i], &added);
      if (row == nullptr) {
        out_of_memory.store(true, std::memory_order_relaxed);
        return;
      }
      std::memcpy(row, src + i * value_stride,
                  sizeof(float) * (with_state ? stride_ : dim));
      if (!with_state) optimizer_->InitState(row, row + dim, dim);
    });
  } else if (options_.dense) {
    ForEachKey(keys, runner, [&](Shard& shard, size_t i) {
      float* row = RowOf(shard, static_cast<uint32_t>(keys[i]));
      const float* from = src + i * value_stride;
      std::memcpy(row, from, sizeof(float) * (with_state ? stride_ : dim));
      if (!with_state) optimizer_->InitState(row, row + dim, dim);
    });
  } else if (shards_.size() == 1) {
    out_of_memory = !SetShardRows(shards_[0], keys.data(), nullptr, keys.size(),
                                  src, value_stride, with_state);
  } else {
    ComputeShardOf(keys);
    GroupByShard();
    auto one = [&](int i) {
      const uint32_t begin = shard_begin_[i];
      if (!SetShardRows(shards_[i], keys.data(), order_.data() + begin,
                        shard_begin_[i + 1] - begin, src, value_stride,
                        with_state)) {
        out_of_memory.store(true, std::memory_order_relaxed);
      }
    };
    const int n = static_cast<int>(shards_.size());
    if (runner && keys.size() >= options_.parallel_min_keys) {
      runner(n, one);
    } else {
      for (int i = 0; i < n; ++i) one(i);
    }
  }
  UpdateGauges();
  if (!out_of_memory.load()) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      "restoring table ", options_.id, ": out of memory for new rows (",
      MemoryBytes(), " bytes held)"));
}

bool Table::SetShardRows(Shard& shard, const uint64_t* keys,
                         const uint32_t* order, size_t n, const float* values,
                         int value_stride, bool with_state) {
  RowIndex& index = shard.index;
  if (n == 0) return true;
  if (!index.Reserve(index.size() + n).ok()) return false;
  const int dim = options_.dim;
  const size_t copy = sizeof(float) * (with_state ? stride_ : dim);
  auto at = [&](size_t j) -> size_t { return order ? order[j] : j; };
  // Where the shard's next new row goes: the rest of its last slab.
  uint32_t left = 0;
  float* next = nullptr;
  if (shard.num_rows % rows_per_slab_ != 0) {
    left = rows_per_slab_ - shard.num_rows % rows_per_slab_;
    next = RowOf(shard, shard.num_rows);
  }
  for (size_t j = 0; j < n; ++j) {
    if (j + kSetPrefetchDistance < n) {
      index.Prefetch(index.Home(keys[at(j + kSetPrefetchDistance)]));
    }
    const size_t i = at(j);
    bool inserted;
    RowIndex::Slot* slot = index.FindOrInsert(keys[i], &inserted);
    float* row;
    if (slot->width != 0) {
      row = RowOf(shard, slot->row);
    } else {
      if (left == 0) {
        if (shard.num_rows == UINT32_MAX ||
            !AddSlab(shard, rows_per_slab_, /*populate=*/true).ok()) {
          return false;
        }
        left = rows_per_slab_;
        next = static_cast<float*>(shard.slabs.back().data());
      }
      slot->width = static_cast<uint32_t>(dim);
      slot->row = shard.num_rows++;
      row = next;
      next += stride_;
      --left;
    }
    const float* from = values + i * value_stride;
    std::memcpy(row, from, copy);
    if (!with_state) optimizer_->InitState(row, row + dim, dim);
  }
  return true;
}

}  // namespace petrel
