// A server's memory cap over all its tables (server.memory_cap_mib in the
// job config, petrel-server --memory_cap_mib; docs/memory.md, "Server memory
// cap"). The policy:
//
//   1. The dense tables' bytes come first: they hold all their rows and
//      cannot evict any. A cap below them is refused.
//   2. At start the rest (the budget) is split over the sparse tables in
//      proportion to their bytes per row (SparseRowBytes: the row's floats
//      and its 16 bytes of tracking), so that each may hold about the same
//      number of rows.
//   3. Then the shares follow the tables' use: every `rebalance_requests`
//      requests, each sparse table's share becomes a floor of 1/(4n) of
//      the budget (n sparse tables) plus its part of the rest in
//      proportion to its use, the bytes of the rows it touched since the
//      last rebalance (Table::TakeRecentRows times its bytes per row; rows
//      evicted meanwhile count too). A table that streams new keys takes
//      the memory of one that touches few; an idle table keeps its floor.
//      Shares that would all move by less than 1/16 stay.
//   4. A table's own memory_cap_mib applies too: a table whose own cap is
//      below its share keeps its own cap, and what it leaves is split over
//      the others the same way (water-filling).
//
// Each sparse table enforces its share as its memory cap (Table: least
// recently used rows first). A rebalance shrinks tables (evicting their
// least recently used rows, shrinking their indexes) before it grows
// others, and shares never add up to more than the budget, so the tables'
// bytes together never pass the server's cap.
//
// Thread safety: the functions are pure; ServerMemoryBudget is not
// thread-safe (the request handler's thread calls it, between requests).
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

// The shares of `budget` for tables whose uses are `use` (bytes touched
// since the last rebalance) and own caps `own_caps` (0: none): step 3 and
// 4 above. Empty when every use is 0 (nothing to go by).
std::vector<uint64_t> SharesByUse(uint64_t budget,
                                  const std::vector<uint64_t>& use,
                                  const std::vector<uint64_t>& own_caps);

class ServerMemoryBudget {
 public:
  // `sparse`: the server's sparse tables, made with their shares of
  // `cap_bytes` less `dense_bytes` (SplitServerMemoryCap), and `own_caps`
  // their own caps. `metrics` may be null. `rebalance_requests` 0: the
  // shares stay as made.
  ServerMemoryBudget(uint64_t cap_bytes, uint64_t dense_bytes,
                     std::vector<Table*> sparse, std::vector<uint64_t> own_caps,
                     uint64_t rebalance_requests, MetricsRegistry* metrics);

  // After each request: updates petrel_server_table_memory_bytes with
  // `table_bytes` and, with a cap, rebalances every rebalance_requests
  // requests.
  void AfterRequest(uint64_t table_bytes);
  // Moves the shares to the tables' use (the policy above). Returns
  // whether any share moved; an error when a table refused its new share
  // (the shrinks before it are kept, nothing grows then).
  absl::StatusOr<bool> Rebalance();
  // Rebalances that moved shares so far.
  uint64_t rebalances() const { return rebalances_done_; }

 private:
  const uint64_t budget_;  // cap less the dense tables; 0 with no cap
  const std::vector<Table*> sparse_;
  const std::vector<uint64_t> own_caps_;
  std::vector<uint64_t> row_bytes_;
  const uint64_t rebalance_requests_;
  uint64_t requests_ = 0;
  uint64_t rebalances_done_ = 0;
  Gauge* bytes_ = nullptr;
  Counter* rebalances_ = nullptr;
};

}  // namespace petrel

#endif  // PETREL_SERVER_SERVER_MEMORY_BUDGET_H_
