// A server's memory cap over all its tables (server.memory_cap_mib in the
// job config, petrel-server --memory_cap_mib; docs/memory.md, "Server memory
// cap"). The policy:
//
//   1. The dense tables' bytes come first: they hold all their rows and
//      cannot evict any. A cap below them is refused.
//   2. The rest is split over the sparse tables in proportion to their
//      bytes per row (SparseRowBytes: the row's floats and its 16 bytes of
//      tracking), so that each may hold about the same number of rows.
//   3. A table's own memory_cap_mib applies too: a table whose own cap is
//      below its share keeps its own cap, and what it leaves is split over
//      the others the same way (water-filling).
//
// Each sparse table then enforces its share as its memory cap (Table:
// least recently used rows first), so the tables' bytes together never
// pass the server's cap.
//
// Thread safety: SplitServerMemoryCap is a pure function; ServerMemoryGauges
// as the MetricsRegistry's gauges.
#ifndef PETREL_SERVER_SERVER_MEMORY_BUDGET_H_
#define PETREL_SERVER_SERVER_MEMORY_BUDGET_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include "base/metrics.h"
#include "server/table.h"

namespace petrel {

// The bytes a capped sparse table's row takes in its shares' split:
// stride floats (weights and optimizer state) and 16 bytes of tracking.
// InvalidArgument for a bad optimizer.
absl::StatusOr<uint64_t> SparseRowBytes(const TableOptions& table);

// Sets memory_cap_bytes of every sparse table of `tables` to its share of
// `cap_bytes` (the policy above) once `dense_bytes` (the dense tables'
// bytes on this server) are set aside; dense tables are left alone.
// `cap_bytes` 0: no server cap, nothing changes. InvalidArgument naming
// server.memory_cap_mib when the dense tables alone need more than the
// cap.
absl::Status SplitServerMemoryCap(uint64_t cap_bytes, uint64_t dense_bytes,
                                  std::vector<TableOptions>* tables);

// The server's gauges: petrel_server_table_memory_bytes (its tables'
// bytes together) and petrel_server_memory_cap_bytes (0: no cap).
class ServerMemoryGauges {
 public:
  // `metrics` may be null (then Update does nothing).
  ServerMemoryGauges(MetricsRegistry* metrics, uint64_t cap_bytes);
  void Update(uint64_t table_bytes);

 private:
  Gauge* bytes_ = nullptr;
};

}  // namespace petrel

#endif  // PETREL_SERVER_SERVER_MEMORY_BUDGET_H_
