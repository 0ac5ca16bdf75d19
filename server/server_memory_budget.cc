#include "server/server_memory_budget.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

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

std::vector<uint64_t> SharesByUse(uint64_t budget,
                                  const std::vector<uint64_t>& use,
                                  const std::vector<uint64_t>& own_caps) {
  const size_t n = use.size();
  unsigned __int128 total_use = 0;
  for (uint64_t u : use) total_use += u;
  if (n == 0 || total_use == 0) return {};
  const uint64_t floor = budget / (4 * n);
  std::vector<uint64_t> shares(n, 0);
  std::vector<bool> fixed(n, false);
  uint64_t left = budget;  // of the budget, what the open tables share
  for (;;) {
    size_t open = 0;
    unsigned __int128 open_use = 0;
    for (size_t i = 0; i < n; ++i) {
      if (!fixed[i]) {
        ++open;
        open_use += use[i];
      }
    }
    if (open == 0) break;
    const uint64_t rest = left - std::min<uint64_t>(left, floor * open);
    auto share = [&](size_t i) {
      if (open_use == 0) return floor + rest / open;
      return floor +
             static_cast<uint64_t>(static_cast<unsigned __int128>(rest) *
                                   use[i] / open_use);
    };
    bool fixed_one = false;
    for (size_t i = 0; i < n && !fixed_one; ++i) {
      if (!fixed[i] && own_caps[i] > 0 && own_caps[i] <= share(i)) {
        shares[i] = own_caps[i];
        fixed[i] = true;
        left -= own_caps[i];
        fixed_one = true;
      }
    }
    if (fixed_one) continue;
    for (size_t i = 0; i < n; ++i) {
      if (!fixed[i]) shares[i] = share(i);
    }
    break;
  }
  return shares;
}

ServerMemoryBudget::ServerMemoryBudget(uint64_t cap_bytes, uint64_t dense_bytes,
                                       std::vector<Table*> sparse,
                                       std::vector<uint64_t> own_caps,
                                       uint64_t rebalance_requests,
                                       MetricsRegistry* metrics)
    : budget_(cap_bytes > dense_bytes ? cap_bytes - dense_bytes : 0),
      sparse_(std::move(sparse)),
      own_caps_(std::move(own_caps)),
      rebalance_requests_(cap_bytes > 0 ? rebalance_requests : 0) {
  for (Table* t : sparse_) {
    absl::StatusOr<uint64_t> row = SparseRowBytes(t->options());
    row_bytes_.push_back(row.ok() ? *row : 1);
  }
  if (metrics == nullptr) return;
  bytes_ = metrics->GetGauge(
      "petrel_server_table_memory_bytes",
      "Bytes held by all the tables of this server (the sum of "
      "petrel_table_memory_bytes).");
  metrics
      ->GetGauge("petrel_server_memory_cap_bytes",
                 "The server's memory cap over all its tables (0: none).")
      ->Set(static_cast<double>(cap_bytes));
  rebalances_ = metrics->GetCounter(
      "petrel_server_memory_rebalances_total",
      "Times the server moved its tables' shares of its memory cap.");
}

void ServerMemoryBudget::AfterRequest(uint64_t table_bytes) {
  if (bytes_ != nullptr) bytes_->Set(static_cast<double>(table_bytes));
  if (rebalance_requests_ == 0 || ++requests_ < rebalance_requests_) return;
  requests_ = 0;
  absl::StatusOr<bool> moved = Rebalance();
  if (!moved.ok()) {
    LOG_EVERY_T(WARNING, 60.0) << "server memory cap: " << moved.status();
  }
}

absl::StatusOr<bool> ServerMemoryBudget::Rebalance() {
  std::vector<uint64_t> use(sparse_.size());
  for (size_t i = 0; i < sparse_.size(); ++i) {
    use[i] = sparse_[i]->TakeRecentRows() * row_bytes_[i];
  }
  const std::vector<uint64_t> shares = SharesByUse(budget_, use, own_caps_);
  if (shares.empty()) return false;
  bool moves = false;
  for (size_t i = 0; i < shares.size(); ++i) {
    const uint64_t now = sparse_[i]->options().memory_cap_bytes;
    const uint64_t diff = shares[i] > now ? shares[i] - now : now - shares[i];
    if (diff > now / 16) moves = true;
  }
  if (!moves) return false;
  // Shrink first: the shares' sum is within the budget at every step.
  for (bool shrink : {true, false}) {
    for (size_t i = 0; i < shares.size(); ++i) {
      const uint64_t now = sparse_[i]->options().memory_cap_bytes;
      if (shares[i] == now || (shares[i] < now) != shrink) continue;
      absl::Status s = sparse_[i]->SetMemoryCap(shares[i]);
      if (!s.ok()) {
        return absl::Status(s.code(),
                            absl::StrCat("table ", sparse_[i]->id(),
                                         " keeps its share: ", s.message()));
      }
    }
  }
  ++rebalances_done_;
  if (rebalances_ != nullptr) rebalances_->Increment();
  return true;
}

}  // namespace petrel
