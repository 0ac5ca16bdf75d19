// Table's key visits (table.cc: pulls, pushes and SetRows): each key of a
// request handed to a function with its shard, index slots and rows
// prefetched ahead, shard by shard in parallel for large requests. Template
// definitions of table.h's private members; include only from
// server/table*.cc.
#ifndef PETREL_SERVER_TABLE_KEY_VISIT_H_
#define PETREL_SERVER_TABLE_KEY_VISIT_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/types/span.h"

#include "server/table.h"

namespace petrel {

// How many keys ahead the index slots are prefetched: a big sparse table
// misses the cache on nearly every lookup (a slot, then a row), and
// overlapping those misses is worth more than anything else on this path.
// table_benchmark.cc measures it.
constexpr size_t kPrefetchDistance = 16;

// Two stages: the index slot kPrefetchDistance keys ahead, then (its line
// now on the way) the row itself half as far ahead. `key_at(j)` is the j-th
// key to visit and `shard_at(j)` its shard.
template <typename KeyAt, typename ShardAt>
void Table::Prefetch(size_t j, size_t end, const KeyAt& key_at,
                     const ShardAt& shard_at) const {
  if (j + kPrefetchDistance < end) {
    const size_t a = j + kPrefetchDistance;
    const RowIndex& index = shard_at(a).index;
    index.Prefetch(index.Home(key_at(a)));
  }
  if (j + kPrefetchDistance / 2 < end) {
    const size_t b = j + kPrefetchDistance / 2;
    PrefetchRow(shard_at(b), key_at(b));
  }
}

template <typename Fn>
void Table::ForEachKey(absl::Span<const uint64_t> keys,
                       const ParallelRunner& runner, const Fn& fn) {
  const int num_shards = options_.num_shards;
  const bool dense = options_.dense;
  const bool parallel =
      runner && num_shards > 1 && keys.size() >= options_.parallel_min_keys;
  if (dense && !parallel) {
    for (size_t i = 0; i < keys.size(); ++i) fn(shards_[0], i);
    return;
  }
  if (num_shards == 1) {
    Shard& shard = shards_[0];
    auto key_at = [&](size_t j) { return keys[j]; };
    auto shard_at = [&](size_t) -> const Shard& { return shard; };
    for (size_t i = 0; i < keys.size(); ++i) {
      Prefetch(i, keys.size(), key_at, shard_at);
      fn(shard, i);
    }
    return;
  }
  // Each key's shard, computed once.
  ComputeShardOf(keys);
  const std::vector<uint32_t>& shard_of = shard_of_;
  if (!parallel) {
    auto key_at = [&](size_t j) { return keys[j]; };
    auto shard_at = [&](size_t j) -> const Shard& {
      return shards_[shard_of[j]];
    };
    for (size_t i = 0; i < keys.size(); ++i) {
      Prefetch(i, keys.size(), key_at, shard_at);
      fn(shards_[shard_of[i]], i);
    }
    return;
  }
  GroupByShard();
  const std::vector<uint32_t>& begin = shard_begin_;
  // A dense table has one Shard: its rows are split by key, not stored apart.
  runner(num_shards, [&](int s) {
    Shard& shard = shards_[dense ? 0 : s];
    const uint32_t end = begin[s + 1];
    auto key_at = [&](size_t j) { return keys[order_[j]]; };
    auto shard_at = [&](size_t) -> const Shard& { return shard; };
    for (uint32_t j = begin[s]; j < end; ++j) {
      if (!dense) Prefetch(j, end, key_at, shard_at);
      fn(shard, order_[j]);
    }
  });
}

}  // namespace petrel

#endif  // PETREL_SERVER_TABLE_KEY_VISIT_H_
