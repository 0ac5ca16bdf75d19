// The layout a Table's options give it, decided before any row is stored:
// whether the options are in range, each shard's admission sketch, the rows
// of a slab, and under a memory cap the most rows a shard may hold.
#ifndef PETREL_SERVER_TABLE_PLAN_H_
#define PETREL_SERVER_TABLE_PLAN_H_

#include <cstdint>

#include "absl/status/status.h"

#include "server/table.h"

namespace petrel {

// InvalidArgument naming the option out of its range, or the sparse-only
// options given to a dense table.
absl::Status ValidateTableOptions(const TableOptions& o);
// Sketch counters of one shard and sketch row: the table's
// admission_counters over 4 rows and the shards, at least 16; 0 without
// admission.
uint32_t SketchWidth(const TableOptions& o);
// The rows of a slab: the option, else a huge page's worth of rows of
// `stride` floats.
uint32_t ResolveRowsPerSlab(const TableOptions& o, int stride);
// Under a memory cap: the most rows a shard may hold and the index capacity
// that holds them (rows at most 11/16 of it, so that a Compact of a full
// index, 3/4, frees at least 1/16 of it: a compaction then costs at most
// 16 slot moves per row added since the last). Unless `fixed_slabs`,
// `*rows_per_slab` may shrink so that slabs round a small budget up by
// little. InvalidArgument when the cap leaves no room for a row.
absl::Status PlanTableCap(const TableOptions& o, int stride,
                          uint32_t* rows_per_slab, uint32_t* max_rows,
                          uint64_t* index_capacity, bool fixed_slabs);

}  // namespace petrel

#endif  // PETREL_SERVER_TABLE_PLAN_H_
