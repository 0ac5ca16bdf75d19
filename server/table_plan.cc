#include "server/table_plan.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

#include "base/huge_page_memory.h"
#include "base/row_index.h"

namespace petrel {
namespace {

absl::Status OutOfRange(absl::string_view option, double value,
                        absl::string_view range) {
  return absl::InvalidArgumentError(absl::StrCat("table option ", option, " = ",
                                                 value, " is not in ", range));
}

// A shard's bytes with `rows` rows, an index of `capacity` slots and
// `rows_per_slab` rows a slab (as Table::MemoryBytes counts them).
uint64_t ShardBytes(uint64_t rows, uint64_t capacity, uint32_t rows_per_slab,
                    int stride, uint32_t sketch_width) {
  const uint64_t slabs = (rows + rows_per_slab - 1) / rows_per_slab;
  return capacity * sizeof(RowIndex::Slot) +
         slabs * rows_per_slab * stride * sizeof(float) +
         rows * 2 * sizeof(uint64_t) +
         2 * (slabs + 1) * sizeof(HugePageMemory) +  // vector doubling
         uint64_t{4} * sketch_width * sizeof(uint16_t) + sizeof(uint64_t);
}

}  // namespace

absl::Status ValidateTableOptions(const TableOptions& o) {
  if (o.dim < 1 || o.dim > 65536) return OutOfRange("dim", o.dim, "1..65536");
  if (o.dense && (o.num_keys < 1 || o.num_keys > (uint64_t{1} << 32))) {
    return OutOfRange("num_keys", static_cast<double>(o.num_keys),
                      "1..2^32 for a dense table");
  }
  if (o.num_shards < 1 || o.num_shards > 1024) {
    return OutOfRange("num_shards", o.num_shards, "1..1024");
  }
  if (o.rows_per_slab < 0 || o.rows_per_slab > (1 << 20)) {
    return OutOfRange("rows_per_slab", o.rows_per_slab, "0..2^20");
  }
  if (o.admit_after > 65535) {
    return OutOfRange("admit_after", o.admit_after, "0..65535");
  }
  if (o.admit_after > 1 && (o.admission_counters < 64 ||
                            o.admission_counters > (uint64_t{1} << 32))) {
    return OutOfRange("admission_counters",
                      static_cast<double>(o.admission_counters), "64..2^32");
  }
  if (o.ttl_ticks > 1000000) {
    return OutOfRange("ttl_ticks", static_cast<double>(o.ttl_ticks), "0..10^6");
  }
  if (o.dense &&
      (o.admit_after > 1 || o.ttl_ticks > 0 || o.memory_cap_bytes > 0)) {
    return absl::InvalidArgumentError(
        "table options admit_after, ttl and memory_cap are for sparse "
        "tables (a dense table holds all its rows)");
  }
  return absl::OkStatus();
}

uint32_t SketchWidth(const TableOptions& o) {
  if (o.admit_after <= 1) return 0;
  return static_cast<uint32_t>(std::max<uint64_t>(
      16, o.admission_counters / 4 / static_cast<uint64_t>(o.num_shards)));
}

uint32_t ResolveRowsPerSlab(const TableOptions& o, int stride) {
  return o.rows_per_slab > 0
             ? o.rows_per_slab
             : std::max<uint32_t>(1, HugePageMemory::kHugePageBytes /
                                         (stride * sizeof(float)));
}

absl::Status PlanTableCap(const TableOptions& o, int stride,
                          uint32_t* rows_per_slab, uint32_t* max_rows,
                          uint64_t* index_capacity, bool fixed_slabs) {
  const uint64_t budget = o.memory_cap_bytes / o.num_shards;
  const uint32_t sketch = SketchWidth(o);
  const uint64_t per_row = stride * sizeof(float) + 2 * sizeof(uint64_t);
  const uint64_t fixed = uint64_t{4} * sketch * sizeof(uint16_t) + 4096;
  uint64_t best_rows = 0;
  uint64_t best_capacity = 0;
  for (uint64_t c = 16;
       c * sizeof(RowIndex::Slot) + fixed < budget && c <= (uint64_t{1} << 33);
       c *= 2) {
    const uint64_t rows = std::min(
        c / 16 * 11, (budget - fixed - c * sizeof(RowIndex::Slot)) / per_row);
    if (rows > best_rows) {
      best_rows = rows;
      best_capacity = c;
    }
  }
  best_rows = std::min<uint64_t>(best_rows, UINT32_MAX - 1);
  uint32_t rps = fixed_slabs
                     ? *rows_per_slab
                     : std::min<uint64_t>(*rows_per_slab,
                                          std::max<uint64_t>(1, best_rows / 8));
  uint64_t rows = 0;
  if (fixed_slabs) {
    // The slabs are there already: the most rows that fit, whole slabs or
    // not (ShardBytes rises with the rows).
    uint64_t lo = 0;
    uint64_t hi = best_rows;
    while (lo < hi) {
      const uint64_t mid = lo + (hi - lo + 1) / 2;
      if (ShardBytes(mid, best_capacity, rps, stride, sketch) <= budget) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    rows = lo;
  } else {
    rows = best_rows / rps * rps;
    while (rows > 0 &&
           ShardBytes(rows, best_capacity, rps, stride, sketch) > budget) {
      rows -= rps;
    }
  }
  if (rows == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "table option memory_cap_bytes = ", o.memory_cap_bytes,
        " leaves no room for a row in each of the ", o.num_shards,
        " shards (a row takes ", per_row, " bytes, plus its index slots)"));
  }
  *rows_per_slab = rps;
  *max_rows = static_cast<uint32_t>(rows);
  *index_capacity = best_capacity;
  return absl::OkStatus();
}

}  // namespace petrel
