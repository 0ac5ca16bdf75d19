#include "server/server_memory_budget.h"

#include <memory>

#include "absl/strings/str_cat.h"

#include "server/optimizer.h"

namespace petrel {

absl::StatusOr<uint64_t> SparseRowBytes(const TableOptions& table) {
  absl::StatusOr<std::unique_ptr<Optimizer>> optimizer =
      Optimizer::Create(table.optimizer);
  if (!optimizer.ok()) return optimizer.status();
  const uint64_t stride =
      static_cast<uint64_t>(table.dim + (*optimizer)->StateFloats(table.dim));
  return stride * sizeof(float) + 2 * sizeof(uint64_t);
}

absl::Status SplitServerMemoryCap(uint64_t cap_bytes, uint64_t dense_bytes,
                                  std::vector<TableOptions>* tables) {
  if (cap_bytes == 0) return absl::OkStatus();
  if (dense_bytes > cap_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "server.memory_cap_mib: the cap of ", cap_bytes, " bytes is below the ",
        dense_bytes,
        " bytes of this server's dense tables, which hold all their rows"));
  }
  // The sparse tables still sharing the budget, with their weights.
  struct Open {
    TableOptions* table;
    uint64_t weight;
  };
  std::vector<Open> open;
  for (TableOptions& t : *tables) {
    if (t.dense) continue;
    absl::StatusOr<uint64_t> row = SparseRowBytes(t);
    if (!row.ok()) return row.status();
    open.push_back({&t, *row});
  }
  uint64_t budget = cap_bytes - dense_bytes;
  // Water-filling: a table whose own cap is at most its share keeps it and
  // leaves the rest to the others; then the shares are final.
  while (!open.empty()) {
    unsigned __int128 total_weight = 0;
    for (const Open& o : open) total_weight += o.weight;
    auto share = [&](const Open& o) {
      return static_cast<uint64_t>(static_cast<unsigned __int128>(budget) *
                                   o.weight / total_weight);
    };
    bool fixed_one = false;
    for (size_t i = 0; i < open.size(); ++i) {
      const uint64_t own = open[i].table->memory_cap_bytes;
      if (own > 0 && own <= share(open[i])) {
        budget -= own;
        open.erase(open.begin() + static_cast<std::ptrdiff_t>(i));
        fixed_one = true;
        break;
      }
    }
    if (fixed_one) continue;
    for (Open& o : open) o.table->memory_cap_bytes = share(o);
    break;
  }
  return absl::OkStatus();
}

ServerMemoryGauges::ServerMemoryGauges(MetricsRegistry* metrics,
                                       uint64_t cap_bytes) {
  if (metrics == nullptr) return;
  bytes_ = metrics->GetGauge(
      "petrel_server_table_memory_bytes",
      "Bytes held by all the tables of this server (the sum of "
      "petrel_table_memory_bytes).");
  metrics
      ->GetGauge("petrel_server_memory_cap_bytes",
                 "The server's memory cap over all its tables (0: none).")
      ->Set(static_cast<double>(cap_bytes));
}

void ServerMemoryGauges::Update(uint64_t table_bytes) {
  if (bytes_ != nullptr) bytes_->Set(static_cast<double>(table_bytes));
}

}  // namespace petrel
