// Table's admission filter, TTL and memory-cap eviction (table.h): the
// count-min sketch that admits a key after `admit_after` pushes, the clock
// ticks that expire untouched rows, and the sampled-LRU eviction under a
// cap. The row store itself is table.cc.
#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"

#include "server/table.h"

namespace petrel {
namespace {

// Rows of the LRU window an eviction for the cap looks at.
constexpr uint32_t kEvictWindow = 16;

// Slot of one of the 4 sketch rows for `key`.
uint32_t SketchSlot(uint64_t key, int row, uint32_t width) {
  uint64_t x = key + 0x9e3779b97f4a7c15ull * static_cast<uint64_t>(row + 1);
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  x ^= x >> 31;
  return static_cast<uint32_t>((x >> 32) * width >> 32);
}

}  // namespace

uint64_t Table::admitted() const {
  uint64_t n = 0;
  for (const Shard& shard : shards_) n += shard.admitted;
  return n;
}

uint64_t Table::evicted() const {
  uint64_t n = 0;
  for (const Shard& shard : shards_) n += shard.evicted;
  return n;
}

uint64_t Table::filtered() const {
  uint64_t n = 0;
  for (const Shard& shard : shards_) n += shard.filtered;
  return n;
}

std::vector<uint16_t> Table::AdmissionCounters() const {
  std::vector<uint16_t> out;
  for (const Shard& shard : shards_) {
    out.insert(out.end(), shard.sketch.begin(), shard.sketch.end());
  }
  return out;
}

absl::Status Table::SetAdmissionCounters(absl::Span<const uint16_t> counters) {
  size_t total = 0;
  for (const Shard& shard : shards_) total += shard.sketch.size();
  if (counters.size() != total) {
    return absl::InvalidArgumentError(
        absl::StrCat("table ", options_.id, " has ", total,
                     " admission counters, not ", counters.size(),
                     " (admit_after, admission_counters or the number "
                     "of shards changed)"));
  }
  size_t at = 0;
  for (Shard& shard : shards_) {
    std::copy(counters.begin() + at,
              counters.begin() + at + shard.sketch.size(),
              shard.sketch.begin());
    at += shard.sketch.size();
  }
  return absl::OkStatus();
}

bool Table::Sight(Shard& shard, uint64_t key) const {
  const uint32_t width = sketch_width_;
  uint16_t* counter[4];
  uint32_t least = 65535;
  for (int r = 0; r < 4; ++r) {
    counter[r] = &shard.sketch[static_cast<size_t>(r) * width +
                               SketchSlot(key, r, width)];
    least = std::min<uint32_t>(least, *counter[r]);
  }
  // Conservative update: only the counters at the minimum rise, which
  // keeps the over-count of colliding keys small.
  if (least < 65535) ++least;
  for (uint16_t* c : counter) {
    if (*c < least) *c = static_cast<uint16_t>(least);
  }
  return least >= options_.admit_after;
}

Table::Access Table::AccessRow(Shard& shard, uint64_t key, bool push,
                               float** row) {
  if (options_.admit_after > 1 && !options_.dense) {
    const RowIndex::Slot* slot = shard.index.Find(key);
    if (slot == nullptr || slot->width == 0) {
      if (!push) return Access::kNotAdmitted;
      if (!Sight(shard, key)) {
        ++shard.filtered;
        return Access::kNotAdmitted;
      }
      *row = Touch(shard, key);
      if (*row == nullptr) return Access::kOutOfMemory;
      ++shard.admitted;
      return Access::kRow;
    }
  }
  *row = Touch(shard, key);
  return *row == nullptr ? Access::kOutOfMemory : Access::kRow;
}

uint64_t Table::TakeRecentRows() {
  uint64_t n = 0;
  for (Shard& shard : shards_) {
    n += std::exchange(shard.recent_evicted, 0);
    for (uint64_t stamp : shard.row_stamp) n += stamp > recent_mark_ ? 1 : 0;
  }
  recent_mark_ = seq_;
  return n;
}

void Table::EvictRow(Shard& shard, uint32_t row) {
  RowIndex& index = shard.index;
  if (shard.row_stamp[row] > recent_mark_) ++shard.recent_evicted;
  index.Find(shard.row_key[row])->width = 0;
  ++shard.empty_slots;
  const uint32_t last = shard.num_rows - 1;
  if (row != last) {
    std::memcpy(RowOf(shard, row), RowOf(shard, last), sizeof(float) * stride_);
    shard.row_key[row] = shard.row_key[last];
    shard.row_stamp[row] = shard.row_stamp[last];
    index.Find(shard.row_key[row])->row = row;
  }
  shard.row_key.pop_back();
  shard.row_stamp.pop_back();
  shard.num_rows = last;
  ++shard.evicted;
  // Keep at most one empty slab: a table at its cap would otherwise map
  // and unmap a slab as it crosses a slab boundary.
  if (uint64_t{shard.slabs.size()} * rows_per_slab_ >=
      uint64_t{shard.num_rows} + 2 * uint64_t{rows_per_slab_}) {
    shard.slabs.pop_back();
  }
}

void Table::EvictLru(Shard& shard) {
  const uint32_t n = shard.num_rows;
  if (n == 0) return;
  if (shard.hand >= n) shard.hand = 0;
  const uint32_t window = std::min(kEvictWindow, n);
  uint32_t victim = shard.hand;
  for (uint32_t k = 1; k < window; ++k) {
    uint32_t r = shard.hand + k;
    if (r >= n) r -= n;
    if (shard.row_stamp[r] < shard.row_stamp[victim]) victim = r;
  }
  shard.hand += window;
  EvictRow(shard, victim);
}

void Table::EvictUntouchedSince(uint64_t stamp, const ParallelRunner& runner) {
  auto sweep = [&](int s) {
    Shard& shard = shards_[s];
    // From the end: the row moved into a hole has been looked at already.
    for (uint32_t r = shard.num_rows; r-- > 0;) {
      if (shard.row_stamp[r] <= stamp) EvictRow(shard, r);
    }
  };
  const int n = static_cast<int>(shards_.size());
  if (runner && n > 1) {
    runner(n, sweep);
  } else {
    for (int s = 0; s < n; ++s) sweep(s);
  }
  UpdateGauges();
}

void Table::Tick(const ParallelRunner& runner) {
  // tick_marks_ holds seq_ at the last ttl + 1 ticks; a row whose last
  // touch is at or before the oldest was not touched in the ttl ticks since.
  tick_marks_.push_back(seq_);
  if (tick_marks_.size() > options_.ttl_ticks + 1) tick_marks_.pop_front();
  if (tick_marks_.size() == options_.ttl_ticks + 1) {
    EvictUntouchedSince(tick_marks_.front(), runner);
  }
}

void Table::AdvanceClock(int64_t clocks, const ParallelRunner& runner) {
  if (options_.ttl_ticks == 0 ||
      options_.ttl_unit != TableOptions::TtlUnit::kClocks) {
    return;
  }
  const int64_t n =
      std::min<int64_t>(clocks, static_cast<int64_t>(options_.ttl_ticks) + 1);
  // The marks of the ticks before the last, then one sweep for them all.
  for (int64_t i = 1; i < n; ++i) {
    tick_marks_.push_back(seq_);
    if (tick_marks_.size() > options_.ttl_ticks + 1) tick_marks_.pop_front();
  }
  if (n > 0) Tick(runner);
}

}  // namespace petrel
