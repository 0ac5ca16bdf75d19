// Table: one parameter table of a training job, `key -> row`, where a row is
// `dim` float weights followed by the optimizer's state for them. Rows live
// in slabs (arrays of `rows_per_slab` rows), so storing a key costs no heap
// allocation of its own: memory per row is (dim + state) floats, plus the
// hash index entry of sparse tables.
//
// A table is split into `num_shards` internal shards by HashKey(key) %
// num_shards. A sparse shard has its own hash index (RowIndex, key -> row
// number, the index KVStore uses too; a key with a row has width dim) and
// slabs (HugePageMemory: 2 MiB huge pages where a slab is that large); a dense
// table holds rows 0..num_keys-1 directly (no index). Pull and Push take a
// ParallelRunner: with one, and at least `parallel_min_keys` keys, a request's
// keys are grouped by shard and the shards run in parallel; otherwise the
// calling thread does the work.
//
//   Pull    copies each key's weights into out[i * dim ..]; a sparse table
//           creates a missing row first (initializer, then optimizer state),
//           except under admit_after, where a key without a row gets the
//           initializer's value and no row.
//   Push    applies the optimizer to each key's row with grads[i * dim ..];
//           a key given twice is updated twice, in order.
//
// When memory for a new row or a larger index cannot be mapped, Pull and
// Push return ResourceExhausted; the keys before the failing one (in each
// shard) have been handled then: a push may be partly applied, and the
// table stays consistent (a key without a row gets one on a later touch).
//
// Admission and eviction (sparse tables; docs/memory.md):
//   admit_after n > 1   a key gets a row at its n-th sighting, a sighting
//                       being one occurrence in a push. Before that a pull
//                       returns the initializer's value for the key and a
//                       push is counted (`filtered`) and dropped. Sightings
//                       are counted in a count-min sketch (4 rows of 16-bit
//                       saturating counters, conservative update) of
//                       `admission_counters` counters, fixed in size
//                       whatever the number of keys: it never under-counts,
//                       so a key is admitted at its n-th sighting or (after
//                       a hash collision) earlier, never later.
//   ttl_ticks t         a row that no pull or push touched during the last
//                       t ticks is evicted at the tick. A tick is a clock of
//                       the job (AdvanceClock) or a push request to the
//                       table (ttl_unit).
//   memory_cap_bytes    MemoryBytes() never exceeds it: before a new row
//                       would pass the row budget the cap allows, the
//                       least recently used row goes (approximate LRU: the
//                       oldest of the kEvictWindow rows after a rotating
//                       hand; exact while a shard holds that few rows).
// Eviction moves the shard's last row into the hole (rows stay packed, a
// slab is unmapped once a spare one is empty) and leaves the key's index
// slot empty until the index is full, when Compact drops such slots.
// Tracking costs 16 bytes a row (its key and its last touch).
//
// Per-table metrics (label table="<id>") when given a MetricsRegistry:
// petrel_table_keys and petrel_table_memory_bytes (gauges),
// petrel_table_{pushes,pulls}_total (requests),
// petrel_table_{pushed,pulled}_keys_total and
// petrel_table_{pushed,pulled}_bytes_total (keys and value bytes),
// petrel_table_{admitted,evicted,filtered}_total (rows admitted past the
// filter, rows evicted by TTL or cap, pushed keys dropped by the filter)
// and petrel_table_memory_cap_bytes (0: no cap).
//
// Thread safety: not thread-safe; one Pull or Push at a time (it may use the
// runner's threads internally). Const accessors may not run concurrently
// with Pull or Push either.
#ifndef PETREL_SERVER_TABLE_H_
#define PETREL_SERVER_TABLE_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

#include "base/huge_page_memory.h"
#include "base/metrics.h"
#include "base/row_index.h"
#include "base/startup_progress.h"
#include "server/initializer.h"
#include "server/optimizer.h"

namespace petrel {

// Runs fn(0), ..., fn(n - 1), possibly in parallel, and returns when all
// have finished.
using ParallelRunner =
    std::function<void(int n, const std::function<void(int)>& fn)>;

struct TableOptions {
  int id = 0;
  int dim = 1;            // weights per key; 1..65536
  bool dense = false;     // false: sparse, rows created on first touch
  uint64_t num_keys = 0;  // dense: keys 0..num_keys-1, 1..2^32
  InitializerConfig initializer;
  OptimizerConfig optimizer;
  int num_shards = 1;  // 1..1024
  // 1..2^20, or 0: as many as fill 2 MiB (a huge page; at least 1).
  int rows_per_slab = 4096;
  size_t parallel_min_keys = 4096;  // fewer keys run inline
  // Admission and eviction, sparse tables only (see above); 0: off.
  uint32_t admit_after = 0;  // 0..65535; 0 and 1 admit at once
  uint64_t admission_counters = uint64_t{1} << 20;  // sketch size, 64..2^32
  enum class TtlUnit { kClocks, kPushes };
  uint64_t ttl_ticks = 0;
  TtlUnit ttl_unit = TtlUnit::kClocks;
  uint64_t memory_cap_bytes = 0;
};

// How Table::Create fills a dense table's rows: on `threads` threads
// (1..256), telling `progress` (may be null) how far it got and stopping
// with its CancelledError once it is cancelled.
struct TableFill {
  int threads = 1;
  StartupProgress* progress = nullptr;
};

class Table {
 public:
  // InvalidArgument naming the option when one is out of range;
  // ResourceExhausted when a dense table's rows cannot be mapped; Cancelled
  // when fill.progress was cancelled while the rows were filled. `metrics`
  // may be null; when set it must outlive the Table.
  static absl::StatusOr<std::unique_ptr<Table>> Create(
      const TableOptions& options, MetricsRegistry* metrics = nullptr,
      const TableFill& fill = {});
  ~Table();
  Table(const Table&) = delete;
  Table& operator=(const Table&) = delete;

  // REQUIRES: out.size() == keys.size() * dim(). InvalidArgument for a
  // dense key out of range (nothing is copied or created then);
  // ResourceExhausted when out of memory (see above).
  absl::Status Pull(absl::Span<const uint64_t> keys, absl::Span<float> out,
                    const ParallelRunner& runner = nullptr);
  // InvalidArgument when grads.size() != keys.size() * dim() or a dense key
  // is out of range; nothing is applied then. ResourceExhausted when out of
  // memory (see above).
  absl::Status Push(absl::Span<const uint64_t> keys,
                    absl::Span<const float> grads,
                    const ParallelRunner& runner = nullptr);

  // Advances the table's clock by `clocks` (the job's clock, as the server
  // sees it): with ttl_unit kClocks, rows untouched for ttl_ticks clocks
  // are evicted.
  void AdvanceClock(int64_t clocks, const ParallelRunner& runner = nullptr);

  // The weights of `key`, or null when the row does not exist. Valid until
  // the next Pull or Push.
  const float* Find(uint64_t key) const;

  int id() const { return options_.id; }
  int dim() const { return options_.dim; }
  bool dense() const { return options_.dense; }
  // Floats per row: dim plus the optimizer's state.
  int stride() const { return stride_; }
  int num_shards() const { return options_.num_shards; }
  // Rows stored (64-bit; a row's id within its shard is 32-bit, the index
  // slot's, so one shard holds at most 2^32 - 1 rows and a table of 1024
  // shards about 4.4e12).
  size_t num_rows() const;
  // Calls fn(key, weights) for every stored row (dim() weights), in no
  // particular order. Not concurrently with Pull or Push.
  void ForEachRow(
      const std::function<void(uint64_t key, const float* weights)>& fn) const;
  // Bytes held by slabs, hash indexes, row tracking and the admission
  // sketch.
  size_t MemoryBytes() const;
  // Admission and eviction counts since the table was made (or loaded).
  uint64_t admitted() const;
  uint64_t evicted() const;
  uint64_t filtered() const;
  // Changes a capped sparse table's memory cap (a server's cap over its
  // tables moves its shares, server/server_memory_budget.h): plans the rows
  // and index the new cap allows, as Create does (with the table's rows per
  // slab), then evicts each shard's least recently used rows down to them
  // and shrinks its index, tracking arrays and slab list, so that
  // MemoryBytes() <= `bytes` on return. InvalidArgument, nothing changed,
  // when the cap leaves no room for a row per shard or the table has no
  // cap; ResourceExhausted when a smaller index cannot be mapped (the
  // rows are evicted then; the index shrinks at a later call).
  absl::Status SetMemoryCap(uint64_t bytes);
  // The rows touched (pulled or pushed) since the last call (or since the
  // table was made), each counted once, those evicted since included:
  // a capped table's use of its memory. O(rows).
  uint64_t TakeRecentRows();
  // The most rows a sparse shard holds under the memory cap (UINT32_MAX:
  // no cap).
  uint32_t max_rows_per_shard() const { return max_rows_; }
  // The admission sketch, shard after shard (empty without admit_after):
  // checkpoints save it and SetAdmissionCounters restores it.
  // InvalidArgument when the size differs from this table's.
  std::vector<uint16_t> AdmissionCounters() const;
  absl::Status SetAdmissionCounters(absl::Span<const uint16_t> counters);
  const TableOptions& options() const { return options_; }

  // Checkpoints (server/table_server.h). Calls fn(key, row) for every
  // stored row with its stride() floats (dim() weights, then the
  // optimizer's state): a sparse table's rows in the order they were made
  // (never in hash order, which would make loading them quadratic), a
  // dense table's by key. Not concurrently with Pull
  // or Push.
  void ForEachStoredRow(
      const std::function<void(uint64_t key, const float* row)>& fn) const;
  // The same rows in the same order, a block at a time: fn(keys, rows, n)
  // with n keys and their n rows of stride() floats each, back to back.
  using StoredBlockFn =
      std::function<void(const uint64_t* keys, const float* rows, size_t n)>;
  void ForEachStoredBlock(const StoredBlockFn& fn) const;
  // Makes room in a sparse table's index for about `rows` more keys (spread
  // over the shards), so that adding them rehashes nothing: a hint before a
  // bulk load. ResourceExhausted when the memory cannot be mapped.
  absl::Status Reserve(size_t rows);
  // Sets the rows of `keys` (created when missing) from `values`, which
  // holds `value_stride` floats per key. With `with_state` a row takes all
  // its stride() floats (REQUIRES value_stride == stride()); without, it
  // takes the first dim() floats as its weights and its optimizer state
  // starts as for a new row (Optimizer::InitState), whatever followed them.
  // InvalidArgument for a bad size or a dense key out of range (nothing is
  // set then); ResourceExhausted when out of memory (see above). Built for
  // bulk loads: a sparse shard's new rows are appended to its slabs in
  // order (new slabs are committed up front), its index is grown once per
  // call, and its keys are looked up with prefetching.
  absl::Status SetRows(absl::Span<const uint64_t> keys,
                       absl::Span<const float> values, int value_stride,
                       bool with_state, const ParallelRunner& runner = nullptr);

 private:
  // One shard's rows. Dense tables use only row numbers (row == key) and
  // share one Shard; sparse tables have one per shard.
  struct Shard {
    RowIndex index;  // sparse only; a key's width is dim once it has a row
    std::vector<HugePageMemory> slabs;
    uint32_t num_rows = 0;  // sparse only
    // With TTL or cap: per row, its key and the request that last touched
    // it (Table::seq_).
    std::vector<uint64_t> row_key;
    std::vector<uint64_t> row_stamp;
    uint64_t empty_slots = 0;      // index slots of width 0
    uint32_t hand = 0;             // where the next LRU window starts
    uint64_t recent_evicted = 0;   // evicted rows touched after recent_mark_
    std::vector<uint16_t> sketch;  // admit_after: 4 rows of sketch_width_
    uint64_t admitted = 0;
    uint64_t evicted = 0;
    uint64_t filtered = 0;
  };
  struct Metrics {
    Gauge* keys = nullptr;
    Gauge* memory_bytes = nullptr;
    Counter* pushes = nullptr;
    Counter* pulls = nullptr;
    Counter* pushed_keys = nullptr;
    Counter* pulled_keys = nullptr;
    Counter* pushed_bytes = nullptr;
    Counter* pulled_bytes = nullptr;
    Counter* admitted = nullptr;
    Counter* evicted = nullptr;
    Counter* filtered = nullptr;
    Gauge* memory_cap = nullptr;
    uint64_t admitted_seen = 0;  // what the counters were told so far
    uint64_t evicted_seen = 0;
    uint64_t filtered_seen = 0;
  };
  // What a sparse key access found.
  enum class Access { kRow, kNotAdmitted, kOutOfMemory };

  Table(const TableOptions& options, std::unique_ptr<Optimizer> optimizer,
        Initializer initializer, uint32_t rows_per_slab, uint32_t max_rows);
  bool tracking() const { return track_; }
  // The row of `key` for a pull or push (`push`) under admission and
  // eviction: found, made (admitted), or not.
  Access AccessRow(Shard& shard, uint64_t key, bool push, float** row);
  // Counts a pushed sighting of `key`; true once it reached admit_after.
  bool Sight(Shard& shard, uint64_t key) const;
  void EvictRow(Shard& shard, uint32_t row);
  void EvictLru(Shard& shard);
  // Evicts every row last touched in request `stamp` or before.
  void EvictUntouchedSince(uint64_t stamp, const ParallelRunner& runner);
  void Tick(const ParallelRunner& runner);
  void UpdateCounters();
  absl::Status InitDense(const TableFill& fill);
  // Maps one more slab of `rows` rows in `shard`; with `populate`, commits
  // its pages at once (a bulk load fills it right away).
  absl::Status AddSlab(Shard& shard, size_t rows, bool populate = false);
  // shard_of_[i] = ShardOf(keys[i]).
  void ComputeShardOf(absl::Span<const uint64_t> keys);
  // Groups the keys of the last ComputeShardOf by shard: shard s's keys are
  // then keys[order_[shard_begin_[s]]] .. keys[order_[shard_begin_[s + 1] -
  // 1]], in request order.
  void GroupByShard();
  // SetRows for the `n` keys keys[order[0..n-1]] of a sparse `shard`
  // (order null: keys[0..n-1]). False when out of memory.
  bool SetShardRows(Shard& shard, const uint64_t* keys, const uint32_t* order,
                    size_t n, const float* values, int value_stride,
                    bool with_state);
  void InitMetrics(MetricsRegistry* metrics);
  void UpdateGauges();
  absl::Status CheckKeys(absl::Span<const uint64_t> keys) const;
  int ShardOf(uint64_t key) const;
  float* RowOf(const Shard& shard, uint32_t row) const;
  // The row of `key` in `shard`, created when missing; null when memory
  // for it cannot be mapped.
  float* Touch(Shard& shard, uint64_t key);
  // Maps a slab for the next new row of a sparse shard when its slabs are
  // full; false when out of memory.
  bool MakeRoom(Shard& shard);
  // Touch without initialising a new row (`*added` says it is new).
  float* FindOrAddRow(Shard& shard, uint64_t key, bool* added);
  // Software prefetch of a key's index entry and row (see table.cc).
  void PrefetchRow(const Shard& shard, uint64_t key) const;
  template <typename KeyAt, typename ShardAt>
  void Prefetch(size_t j, size_t end, const KeyAt& key_at,
                const ShardAt& shard_at) const;
  // Runs fn(shard, key index) for every key, in key order within a shard;
  // shards in parallel when `runner` is set and the request is large enough.
  template <typename Fn>
  void ForEachKey(absl::Span<const uint64_t> keys, const ParallelRunner& runner,
                  const Fn& fn);
  // ForEachKey with each key's row, created when missing: fn(row, key
  // index); with admit_after, row is null for a key not admitted (a `push`
  // counts a sighting). ResourceExhausted, naming the `request` ("pull from"),
  // when a row could not be mapped (fn skipped that key).
  template <typename Fn>
  absl::Status ForEachRowOf(absl::Span<const uint64_t> keys,
                            const ParallelRunner& runner,
                            absl::string_view request, bool push, const Fn& fn);

  TableOptions options_;  // only memory_cap_bytes changes (SetMemoryCap)
  const std::unique_ptr<Optimizer> optimizer_;
  const Initializer initializer_;
  const int stride_;
  const uint32_t rows_per_slab_;    // options_.rows_per_slab, resolved
  const bool track_;                // TTL or cap: rows carry key and stamp
  uint32_t max_rows_ = UINT32_MAX;  // per shard, under the cap
  // Under a cap: the index capacity planned for max_rows_ (it grows up to
  // it, then compacts); else SIZE_MAX.
  size_t index_capacity_ = SIZE_MAX;
  uint32_t sketch_width_ = 0;  // per shard and sketch row
  uint64_t seq_ = 0;           // requests so far (row stamps)
  uint64_t recent_mark_ = 0;   // seq_ at the last TakeRecentRows
  // With a TTL: seq_ at each of the last ttl_ticks + 1 ticks, oldest first.
  std::deque<uint64_t> tick_marks_;
  std::vector<Shard> shards_;  // dense: one
  Metrics metrics_;
  // Scratch for grouping a request's keys by shard (reused across calls).
  std::vector<uint32_t> order_;
  std::vector<uint32_t> shard_of_;
  std::vector<uint32_t> shard_begin_;
};

}  // namespace petrel

#endif  // PETREL_SERVER_TABLE_H_
