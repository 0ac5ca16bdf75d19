#include "server/table.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include <sys/mman.h>

#include "absl/base/optimization.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

#include "base/startup_progress.h"
#include "base/status_macros.h"
#include "cluster/key_range_map.h"
#include "server/table_key_visit.h"
#include "server/table_plan.h"

namespace petrel {
namespace {

// MADV_POPULATE_WRITE (Linux 5.14), spelled out for older headers.
#ifdef MADV_POPULATE_WRITE
constexpr int kMadvPopulateWrite = MADV_POPULATE_WRITE;
#else
constexpr int kMadvPopulateWrite = 23;
#endif

// How many keys ahead SetRows prefetches a key's index slot (its rows are
// written in order and need none).
constexpr size_t kSetPrefetchDistance = 16;

}  // namespace

absl::StatusOr<std::unique_ptr<Table>> Table::Create(
    const TableOptions& options, MetricsRegistry* metrics,
    const TableFill& fill) {
  absl::Status s = ValidateTableOptions(options);
  if (!s.ok()) return s;
  absl::StatusOr<std::unique_ptr<Optimizer>> optimizer =
      Optimizer::Create(options.optimizer);
  if (!optimizer.ok()) return optimizer.status();
  absl::StatusOr<Initializer> initializer =
      Initializer::Create(options.initializer, options.id);
  if (!initializer.ok()) return initializer.status();
  const int stride = options.dim + (*optimizer)->StateFloats(options.dim);
  uint32_t rows_per_slab = ResolveRowsPerSlab(options, stride);
  uint32_t max_rows = UINT32_MAX;
  uint64_t index_capacity = 0;
  if (options.memory_cap_bytes > 0) {
    s = PlanTableCap(options, stride, &rows_per_slab, &max_rows,
                     &index_capacity,
                     /*fixed_slabs=*/false);
    if (!s.ok()) return s;
  }
  std::unique_ptr<Table> table(new Table(options, *std::move(optimizer),
                                         *std::move(initializer), rows_per_slab,
                                         max_rows));
  if (options.dense) {
    s = table->InitDense(fill);
    if (!s.ok()) return s;
  }
  if (index_capacity > 0) table->index_capacity_ = index_capacity;
  for (Shard& shard : table->shards_) {
    shard.sketch.assign(size_t{4} * table->sketch_width_, 0);
  }
  table->InitMetrics(metrics);
  return table;
}

Table::Table(const TableOptions& options, std::unique_ptr<Optimizer> optimizer,
             Initializer initializer, uint32_t rows_per_slab, uint32_t max_rows)
    : options_(options),
      optimizer_(std::move(optimizer)),
      initializer_(std::move(initializer)),
      stride_(options.dim + optimizer_->StateFloats(options.dim)),
      rows_per_slab_(rows_per_slab),
      track_(!options.dense &&
             (options.ttl_ticks > 0 || options.memory_cap_bytes > 0)),
      max_rows_(max_rows),
      sketch_width_(SketchWidth(options)),
      shards_(options.dense ? 1 : options.num_shards) {}

Table::~Table() = default;

absl::Status Table::AddSlab(Shard& shard, size_t rows, bool populate) {
  const size_t bytes = rows * stride_ * sizeof(float);
  absl::StatusOr<HugePageMemory> slab = HugePageMemory::Map(
      bytes, /*advise=*/bytes >= HugePageMemory::kHugePageBytes);
  if (!slab.ok()) {
    return absl::ResourceExhaustedError(
        absl::StrCat("table ", options_.id, ": no memory for ", rows,
                     " more rows: ", slab.status().message()));
  }
  if (populate) {
    // One call instead of a fault per page; a kernel before 5.14 says
    // EINVAL, and the pages then come one fault at a time as before.
    madvise(slab->data(), slab->size(), kMadvPopulateWrite);
  }
  shard.slabs.push_back(*std::move(slab));
  return absl::OkStatus();
}

absl::Status Table::InitDense(const TableFill& fill) {
  Shard& shard = shards_[0];
  const uint64_t n = options_.num_keys;
  const uint64_t per_slab = rows_per_slab_;
  // The slabs are mapped first (their pages come as they are filled).
  for (uint64_t first = 0; first < n; first += per_slab) {
    PETREL_RETURN_IF_ERROR(AddSlab(shard, std::min(per_slab, n - first)));
  }
  StartupProgress* progress = fill.progress;
  if (progress != nullptr) {
    const double gib = static_cast<double>(n) * stride_ * sizeof(float) /
                       static_cast<double>(uint64_t{1} << 30);
    progress->Begin(absl::StrCat("filling dense table ", options_.id, " (", n,
                                 " rows of ", options_.dim, " weights, ",
                                 absl::StrFormat("%.1f", gib), " GiB)"),
                    n);
  }
  // Rows are filled from their key alone, so slabs go to any thread.
  const size_t slabs = shard.slabs.size();
  std::atomic<size_t> next{0};
  auto fill_slabs = [&] {
    for (size_t i; (i = next.fetch_add(1)) < slabs;) {
      if (progress != nullptr && progress->cancelled()) return;
      const uint64_t first = i * per_slab;
      const uint64_t rows = std::min(per_slab, n - first);
      float* base = static_cast<float*>(shard.slabs[i].data());
      for (uint64_t r = 0; r < rows; ++r) {
        float* row = base + r * stride_;
        initializer_.Fill(first + r, row, options_.dim);
        optimizer_->InitState(row, row + options_.dim, options_.dim);
      }
      if (progress != nullptr) progress->Advance(rows);
    }
  };
  const int threads = static_cast<int>(std::min<size_t>(
      slabs, static_cast<size_t>(std::clamp(fill.threads, 1, 256))));
  std::vector<std::thread> helpers;
  for (int t = 1; t < threads; ++t) helpers.emplace_back(fill_slabs);
  fill_slabs();
  for (std::thread& t : helpers) t.join();
  if (progress != nullptr) {
    if (progress->cancelled()) return progress->CancelledError();
    progress->End();
  }
  return absl::OkStatus();
}

void Table::InitMetrics(MetricsRegistry* metrics) {
  if (metrics == nullptr) return;
  const MetricLabels labels = {{"table", absl::StrCat(options_.id)}};
  metrics_.keys = metrics->GetGauge("petrel_table_keys",
                                    "Rows stored in the table.", labels);
  metrics_.memory_bytes = metrics->GetGauge(
      "petrel_table_memory_bytes",
      "Bytes held by the table's row slabs and hash indexes.", labels);
  metrics_.pushes = metrics->GetCounter("petrel_table_pushes_total",
                                        "Push requests applied.", labels);
  metrics_.pulls = metrics->GetCounter("petrel_table_pulls_total",
                                       "Pull requests answered.", labels);
  metrics_.pushed_keys = metrics->GetCounter("petrel_table_pushed_keys_total",
                                             "Keys in applied pushes.", labels);
  metrics_.pulled_keys = metrics->GetCounter("petrel_table_pulled_keys_total",
                                             "Keys in answered pulls.", labels);
  metrics_.pushed_bytes = metrics->GetCounter(
      "petrel_table_pushed_bytes_total", "Gradient bytes applied.", labels);
  metrics_.pulled_bytes = metrics->GetCounter("petrel_table_pulled_bytes_total",
                                              "Weight bytes returned.", labels);
  metrics_.admitted = metrics->GetCounter(
      "petrel_table_admitted_total",
      "Keys given a row by the admission filter (admit_after).", labels);
  metrics_.evicted = metrics->GetCounter(
      "petrel_table_evicted_total",
      "Rows evicted for their TTL or the memory cap.", labels);
  metrics_.filtered = metrics->GetCounter(
      "petrel_table_filtered_total",
      "Pushed keys dropped because the filter had not admitted them yet.",
      labels);
  metrics_.memory_cap = metrics->GetGauge(
      "petrel_table_memory_cap_bytes",
      "The table's memory cap on this server (0: none).", labels);
  metrics_.memory_cap->Set(static_cast<double>(options_.memory_cap_bytes));
  UpdateGauges();
}

void Table::UpdateGauges() {
  if (metrics_.keys == nullptr) return;
  metrics_.keys->Set(static_cast<double>(num_rows()));
  metrics_.memory_bytes->Set(static_cast<double>(MemoryBytes()));
  UpdateCounters();
}

void Table::UpdateCounters() {
  if (metrics_.admitted == nullptr) return;
  auto tell = [](Counter* c, uint64_t now, uint64_t* seen) {
    if (now > *seen) c->Increment(static_cast<int64_t>(now - *seen));
    *seen = now;
  };
  tell(metrics_.admitted, admitted(), &metrics_.admitted_seen);
  tell(metrics_.evicted, evicted(), &metrics_.evicted_seen);
  tell(metrics_.filtered, filtered(), &metrics_.filtered_seen);
}

size_t Table::num_rows() const {
  if (options_.dense) return options_.num_keys;
  size_t n = 0;
  for (const Shard& shard : shards_) n += shard.num_rows;
  return n;
}

size_t Table::MemoryBytes() const {
  size_t bytes = 0;
  for (const Shard& shard : shards_) {
    bytes += shard.index.MemoryBytes();
    bytes += shard.slabs.capacity() * sizeof(shard.slabs[0]);
    for (const HugePageMemory& slab : shard.slabs) bytes += slab.size();
    bytes += shard.row_key.capacity() * sizeof(uint64_t);
    bytes += shard.row_stamp.capacity() * sizeof(uint64_t);
    bytes += shard.sketch.capacity() * sizeof(uint16_t);
  }
  return bytes;
}

int Table::ShardOf(uint64_t key) const {
  return static_cast<int>(HashKey(key) % options_.num_shards);
}

float* Table::RowOf(const Shard& shard, uint32_t row) const {
  const uint32_t per_slab = rows_per_slab_;
  return static_cast<float*>(shard.slabs[row / per_slab].data()) +
         static_cast<size_t>(row % per_slab) * stride_;
}

bool Table::MakeRoom(Shard& shard) {
  if (shard.num_rows == UINT32_MAX) return false;
  // Evicting tables may keep one empty slab beyond their rows.
  if (static_cast<uint64_t>(shard.num_rows) <
      uint64_t{shard.slabs.size()} * rows_per_slab_) {
    return true;
  }
  return AddSlab(shard, rows_per_slab_).ok();
}

float* Table::FindOrAddRow(Shard& shard, uint64_t key, bool* added) {
  *added = false;
  if (options_.dense) return RowOf(shard, static_cast<uint32_t>(key));
  RowIndex& index = shard.index;
  if (track_) {
    RowIndex::Slot* found = index.Find(key);
    if (found != nullptr && found->width != 0) {
      shard.row_stamp[found->row] = seq_;
      return RowOf(shard, found->row);
    }
    if (shard.num_rows >= max_rows_) EvictLru(shard);
    // Drop the slots of evicted keys rather than grow the index: under a
    // cap once it has the capacity the cap planned (16/11 of the rows, so
    // a compaction frees at least 1/16 of it), else once they are half the
    // index.
    if (index.size() + 1 > index.max_size() && shard.empty_slots > 0 &&
        (index.capacity() >= index_capacity_ ||
         shard.empty_slots * 2 >= index.size())) {
      if (!index.Compact().ok()) return nullptr;
      shard.empty_slots = 0;
    }
    if (shard.num_rows == shard.row_key.capacity()) {
      // Grown by doubling, but never past the rows the cap allows.
      const size_t more = std::min<size_t>(
          max_rows_, std::max<size_t>(16, 2 * shard.row_key.capacity()));
      shard.row_key.reserve(more);
      shard.row_stamp.reserve(more);
    }
  }
  if (ABSL_PREDICT_FALSE(!index.Reserve(index.size() + 1).ok())) return nullptr;
  bool inserted = false;
  RowIndex::Slot* slot = index.FindOrInsert(key, &inserted);
  if (ABSL_PREDICT_TRUE(slot->width != 0)) return RowOf(shard, slot->row);
  // A new key, or one whose row was evicted or could not be mapped before.
  if (!MakeRoom(shard)) return nullptr;
  if (track_) {
    if (!inserted && shard.empty_slots > 0) --shard.empty_slots;
    shard.row_key.push_back(key);
    shard.row_stamp.push_back(seq_);
  }
  slot->width = static_cast<uint32_t>(options_.dim);
  slot->row = shard.num_rows;
  *added = true;
  return RowOf(shard, shard.num_rows++);
}

float* Table::Touch(Shard& shard, uint64_t key) {
  bool added;
  float* row = FindOrAddRow(shard, key, &added);
  if (added) {
    initializer_.Fill(key, row, options_.dim);
    optimizer_->InitState(row, row + options_.dim, options_.dim);
  }
  return row;
}

absl::Status Table::SetMemoryCap(uint64_t bytes) {
  if (options_.dense || options_.memory_cap_bytes == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("table ", options_.id, " has no memory cap to change"));
  }
  TableOptions o = options_;
  o.memory_cap_bytes = bytes;
  uint32_t rps = rows_per_slab_;
  uint32_t max_rows = 0;
  uint64_t index_capacity = 0;
  absl::Status s = PlanTableCap(o, stride_, &rps, &max_rows, &index_capacity,
                                /*fixed_slabs=*/true);
  if (!s.ok()) return s;
  options_.memory_cap_bytes = bytes;
  max_rows_ = max_rows;
  index_capacity_ = index_capacity;
  absl::Status shrunk;
  for (Shard& shard : shards_) {
    while (shard.num_rows > max_rows_) EvictLru(shard);
    // No empty slab beyond the rows (EvictRow keeps one).
    while (uint64_t{shard.slabs.size()} * rows_per_slab_ >=
           uint64_t{shard.num_rows} + rows_per_slab_) {
      shard.slabs.pop_back();
    }
    shard.slabs.shrink_to_fit();
    if (shard.row_key.capacity() > max_rows_) {
      shard.row_key.shrink_to_fit();
      shard.row_stamp.shrink_to_fit();
    }
    if (shard.index.capacity() > index_capacity_) {
      absl::Status r = shard.index.Shrink(index_capacity_);
      if (r.ok()) {
        shard.empty_slots = 0;
      } else {
        shrunk = r;
      }
    }
  }
  if (metrics_.memory_cap != nullptr) {
    metrics_.memory_cap->Set(static_cast<double>(bytes));
  }
  UpdateGauges();
  return shrunk;
}

void Table::ForEachStoredRow(
    const std::function<void(uint64_t key, const float* row)>& fn) const {
  ForEachStoredBlock([&](const uint64_t* keys, const float* rows, size_t n) {
    for (size_t i = 0; i < n; ++i) fn(keys[i], rows + i * stride_);
  });
}

void Table::ForEachStoredBlock(const StoredBlockFn& fn) const {
  std::vector<uint64_t> key_of;
  if (options_.dense) {
    const uint64_t n = options_.num_keys;
    for (uint64_t first = 0; first < n; first += rows_per_slab_) {
      key_of.resize(std::min<uint64_t>(rows_per_slab_, n - first));
      for (size_t r = 0; r < key_of.size(); ++r) key_of[r] = first + r;
      fn(key_of.data(), RowOf(shards_[0], static_cast<uint32_t>(first)),
         key_of.size());
    }
    return;
  }
  // Rows in the order they were made (slab order), not the index's hash
  // order: reading slabs in order is fast, and a table loaded from keys in
  // hash order would pile them into long probe runs of its smaller index
  // while it grows (quadratic). Costs 8 bytes per row of a shard while it
  // runs.
  for (const Shard& shard : shards_) {
    key_of.assign(shard.num_rows, 0);
    shard.index.ForEach([&](const RowIndex::Slot& s) {
      if (s.width != 0) key_of[s.row] = s.key;
    });
    for (uint32_t first = 0; first < shard.num_rows; first += rows_per_slab_) {
      fn(key_of.data() + first, RowOf(shard, first),
         std::min(rows_per_slab_, shard.num_rows - first));
    }
  }
}

void Table::ForEachRow(
    const std::function<void(uint64_t key, const float* weights)>& fn) const {
  if (options_.dense) {
    for (uint64_t key = 0; key < options_.num_keys; ++key) {
      fn(key, RowOf(shards_[0], static_cast<uint32_t>(key)));
    }
    return;
  }
  for (const Shard& shard : shards_) {
    shard.index.ForEach([&](const RowIndex::Slot& s) {
      if (s.width != 0) fn(s.key, RowOf(shard, s.row));
    });
  }
}

const float* Table::Find(uint64_t key) const {
  const Shard& shard = shards_[options_.dense ? 0 : ShardOf(key)];
  if (options_.dense) {
    return key < options_.num_keys ? RowOf(shard, static_cast<uint32_t>(key))
                                   : nullptr;
  }
  const RowIndex::Slot* slot = shard.index.Find(key);
  return slot == nullptr || slot->width == 0 ? nullptr
                                             : RowOf(shard, slot->row);
}

absl::Status Table::CheckKeys(absl::Span<const uint64_t> keys) const {
  if (!options_.dense) return absl::OkStatus();
  for (uint64_t key : keys) {
    if (key >= options_.num_keys) {
      return absl::InvalidArgumentError(
          absl::StrCat("key ", key, " is out of range for dense table ",
                       options_.id, " (", options_.num_keys, " keys)"));
    }
  }
  return absl::OkStatus();
}

void Table::PrefetchRow(const Shard& shard, uint64_t key) const {
  const RowIndex::Slot* slot = shard.index.Find(key);
  if (slot != nullptr && slot->width != 0) {
    const float* p = RowOf(shard, slot->row);
    __builtin_prefetch(p, 1);
    if (stride_ > 16) __builtin_prefetch(p + 16, 1);
  }
}

void Table::ComputeShardOf(absl::Span<const uint64_t> keys) {
  shard_of_.resize(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    shard_of_[i] = static_cast<uint32_t>(ShardOf(keys[i]));
  }
}

void Table::GroupByShard() {
  // A stable counting sort of key indexes by shard keeps each shard's keys
  // in request order (duplicates update in order).
  const size_t n = shard_of_.size();
  std::vector<uint32_t>& begin = shard_begin_;
  begin.assign(options_.num_shards + 1, 0);
  for (size_t i = 0; i < n; ++i) ++begin[shard_of_[i] + 1];
  for (int s = 0; s < options_.num_shards; ++s) begin[s + 1] += begin[s];
  order_.resize(n);
  std::vector<uint32_t> next(begin.begin(), begin.end() - 1);
  for (size_t i = 0; i < n; ++i) {
    order_[next[shard_of_[i]]++] = static_cast<uint32_t>(i);
  }
}

template <typename Fn>
absl::Status Table::ForEachRowOf(absl::Span<const uint64_t> keys,
                                 const ParallelRunner& runner,
                                 absl::string_view request, bool push,
                                 const Fn& fn) {
  std::atomic<bool> out_of_memory{false};
  if (options_.admit_after > 1) {
    ForEachKey(keys, runner, [&](Shard& shard, size_t i) {
      float* row = nullptr;
      const Access a = AccessRow(shard, keys[i], push, &row);
      if (ABSL_PREDICT_FALSE(a == Access::kOutOfMemory)) {
        out_of_memory.store(true, std::memory_order_relaxed);
        return;
      }
      fn(row, i);  // null: not admitted
    });
  } else {
    ForEachKey(keys, runner, [&](Shard& shard, size_t i) {
      float* row = Touch(shard, keys[i]);
      if (ABSL_PREDICT_FALSE(row == nullptr)) {
        out_of_memory.store(true, std::memory_order_relaxed);
        return;
      }
      fn(row, i);
    });
  }
  if (!out_of_memory.load()) return absl::OkStatus();
  UpdateGauges();
  return absl::ResourceExhaustedError(
      absl::StrCat(request, " table ", options_.id,
                   ": out of memory for new rows (", MemoryBytes(),
                   " bytes held); the keys before the failing one were "
                   "handled"));
}

absl::Status Table::Pull(absl::Span<const uint64_t> keys, absl::Span<float> out,
                         const ParallelRunner& runner) {
  const size_t dim = options_.dim;
  if (out.size() != keys.size() * dim) {
    return absl::InvalidArgumentError(absl::StrCat(
        "pull of ", keys.size(), " keys from table ", options_.id, " needs ",
        keys.size() * dim, " output values, not ", out.size()));
  }
  absl::Status s = CheckKeys(keys);
  if (!s.ok()) return s;
  float* dst = out.data();
  ++seq_;
  // Rows are short (often one float): a loop beats a memcpy call per key.
  s = ForEachRowOf(keys, runner, "pull from", /*push=*/false,
                   [&](const float* row, size_t i) {
                     float* to = dst + i * dim;
                     if (ABSL_PREDICT_FALSE(row == nullptr)) {
                       // Not admitted: what its row would start as.
                       initializer_.Fill(keys[i], to, static_cast<int>(dim));
                       return;
                     }
                     for (size_t j = 0; j < dim; ++j) to[j] = row[j];
                   });
  if (!s.ok()) return s;
  if (metrics_.pulls != nullptr) {
    metrics_.pulls->Increment();
    metrics_.pulled_keys->Increment(keys.size());
    metrics_.pulled_bytes->Increment(out.size() * sizeof(float));
    UpdateGauges();
  }
  return absl::OkStatus();
}

absl::Status Table::Push(absl::Span<const uint64_t> keys,
                         absl::Span<const float> grads,
                         const ParallelRunner& runner) {
  const size_t dim = options_.dim;
  if (grads.size() != keys.size() * dim) {
    return absl::InvalidArgumentError(absl::StrCat(
        "push of ", keys.size(), " keys to table ", options_.id, " (dim ", dim,
        ") has ", grads.size(), " values, not ", keys.size() * dim));
  }
  absl::Status s = CheckKeys(keys);
  if (!s.ok()) return s;
  const float* src = grads.data();
  const Optimizer& opt = *optimizer_;
  ++seq_;
  s = ForEachRowOf(
      keys, runner, "push to", /*push=*/true, [&](float* row, size_t i) {
        if (ABSL_PREDICT_FALSE(row == nullptr)) return;
        opt.Update(row, row + dim, src + i * dim, static_cast<int>(dim));
      });
  if (options_.ttl_ticks > 0 &&
      options_.ttl_unit == TableOptions::TtlUnit::kPushes) {
    Tick(runner);
  }
  if (!s.ok()) return s;
  if (metrics_.pushes != nullptr) {
    metrics_.pushes->Increment();
    metrics_.pushed_keys->Increment(keys.size());
    metrics_.pushed_bytes->Increment(grads.size() * sizeof(float));
    UpdateGauges();
  }
  return absl::OkStatus();
}

// Bulk loads (Reserve, SetRows), the path checkpoint restores take: the
// index grown once, lookups prefetched, rows appended to slabs populated up
// front.
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
