#include "server/table_server.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "glog/logging.h"

#include "job/job_check.h"
#include "server/table_config.h"
#include "van/message.h"

namespace petrel {
namespace {

absl::Status CheckServerOptions(const TableServerOptions& o) {
  if (o.num_threads < 0 || o.num_threads > 256) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_threads = ", o.num_threads, " is not in 0..256"));
  }
  if (o.num_shards < 0 || o.num_shards > 1024) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_shards = ", o.num_shards, " is not in 0..1024"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<TableServer>> TableServer::Create(
    const pb::JobConfig& job, int num_workers, MetricsRegistry* metrics,
    TableServerOptions options) {
  if (num_workers < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_workers = ", num_workers, " is not >= 1"));
  }
  absl::Status s = CheckServerOptions(options);
  if (!s.ok()) return s;
  absl::StatusOr<int64_t> tau = MaxDelayFromJob(job);
  if (!tau.ok()) return tau.status();
  absl::StatusOr<std::vector<TableOptions>> tables = TableOptionsFromJob(job);
  if (!tables.ok()) return tables.status();
  if (options.num_threads == 0) {
    options.num_threads = std::clamp(
        static_cast<int>(std::thread::hardware_concurrency()), 1, 256);
  }
  if (options.num_shards == 0) {
    options.num_shards = std::min(1024, 2 * options.num_threads);
  }
  std::unique_ptr<TableServer> server(
      new TableServer(num_workers, *tau, options, metrics));
  const double cap_mib = job.server().memory_cap_mib();
  if (!(cap_mib >= 0 && cap_mib <= 1e12)) {
    return absl::InvalidArgumentError(
        absl::StrCat("server.memory_cap_mib: ", cap_mib,
                     " is not a finite value in 0..10^12"));
  }
  server->memory_cap_bytes_ = static_cast<uint64_t>(cap_mib * (1 << 20));
  // The dense tables first: the server's cap is split over the sparse ones
  // once their bytes are known.
  std::vector<uint64_t> own_caps;  // the sparse tables', in table order
  for (const TableOptions& t : *tables) {
    if (!t.dense) own_caps.push_back(t.memory_cap_bytes);
  }
  uint64_t dense_bytes = 0;
  for (bool dense : {true, false}) {
    if (!dense) {
      s = SplitServerMemoryCap(server->memory_cap_bytes_, dense_bytes,
                               &*tables);
      if (!s.ok()) return s;
    }
    for (TableOptions& t : *tables) {
      if (t.dense != dense) continue;
      t.num_shards = options.num_shards;
      t.rows_per_slab = options.rows_per_slab;
      t.parallel_min_keys = options.parallel_min_keys;
      absl::StatusOr<std::unique_ptr<Table>> table = Table::Create(
          t, metrics, TableFill{options.num_threads, options.progress});
      if (!table.ok()) {
        return absl::Status(
            table.status().code(),
            absl::StrCat("table ", t.id,
                         server->memory_cap_bytes_ > 0 && !dense
                             ? " (its share of server.memory_cap_mib)"
                             : "",
                         ": ", table.status().message()));
      }
      if (dense) dense_bytes += (*table)->MemoryBytes();
      server->tables_[t.id] = *std::move(table);
      server->table_names_[t.id] = DescribeTable(job, t.id);
    }
  }
  std::vector<Table*> sparse;
  for (const TableOptions& t : *tables) {
    if (!t.dense) sparse.push_back(server->tables_.at(t.id).get());
  }
  server->memory_budget_ = std::make_unique<ServerMemoryBudget>(
      server->memory_cap_bytes_, dense_bytes, std::move(sparse),
      std::move(own_caps), options.memory_rebalance_requests, metrics);
  server->memory_budget_->AfterRequest(server->MemoryBytes());
  return server;
}

TableServer::TableServer(int num_workers, int64_t max_delay,
                         TableServerOptions options, MetricsRegistry* metrics)
    : num_workers_(num_workers),
      max_delay_(max_delay),
      options_(options),
      pool_(options.num_threads),
      runner_([this](int n, const std::function<void(int)>& fn) {
        pool_.Run(n, fn);
      }),
      clocks_(num_workers, 0) {
  if (metrics != nullptr) {
    held_gauge_ =
        metrics->GetGauge("petrel_server_held_pulls",
                          "Pulls waiting for slower workers (bounded delay).");
    min_clock_gauge_ =
        metrics->GetGauge("petrel_server_min_clock",
                          "Smallest clock of the workers still in the job.");
    rejected_pushes_ = metrics->GetCounter(
        "petrel_server_rejected_pushes_total",
        "Pushes refused for a NaN, infinite or overflowing gradient.");
  }
}

TableServer::~TableServer() { Stop(); }

absl::Status TableServer::Start() { return pool_.Start(); }

void TableServer::Stop() { pool_.Stop(); }

KVServer<float>::Handler TableServer::handler() {
  return [this](const KVMeta& meta, const KVPairs<float>& data,
                KVServer<float>* server) {
    absl::MutexLock lock(&exec_mu_);
    Execute(meta, data, server);
    memory_budget_->AfterRequest(MemoryBytes());
  };
}

uint64_t TableServer::MemoryBytes() const {
  uint64_t bytes = 0;
  for (const auto& entry : tables_) bytes += entry.second->MemoryBytes();
  return bytes;
}

int64_t TableServer::min_clock() const {
  absl::MutexLock lock(&mu_);
  return min_clock_;
}

size_t TableServer::num_held_pulls() const {
  absl::MutexLock lock(&mu_);
  return held_.size();
}

const Table* TableServer::table(int id) const {
  auto it = tables_.find(id);
  return it == tables_.end() ? nullptr : it->second.get();
}

std::vector<std::string> TableServer::DescribeMemory() const {
  std::vector<int> ids;
  for (const auto& entry : tables_) ids.push_back(entry.first);
  std::sort(ids.begin(), ids.end());
  std::vector<std::string> lines;
  for (int id : ids) {
    const Table& t = *tables_.at(id);
    const uint64_t cap = t.options().memory_cap_bytes;
    lines.push_back(absl::StrCat(
        table_names_.at(id), ": ", t.num_rows(), " rows, ", t.MemoryBytes(),
        " bytes", cap > 0 ? absl::StrCat(" (cap ", cap, ")") : std::string(),
        ", admitted ", t.admitted(), ", evicted ", t.evicted(), ", filtered ",
        t.filtered()));
  }
  if (memory_cap_bytes_ > 0) {
    lines.push_back(absl::StrCat(
        "all tables: ", MemoryBytes(), " bytes (server cap ", memory_cap_bytes_,
        "), shares moved ", memory_budget_->rebalances(), " times"));
  }
  return lines;
}

Table* TableServer::mutable_table(int id) {
  auto it = tables_.find(id);
  return it == tables_.end() ? nullptr : it->second.get();
}

void TableServer::Handle(const KVMeta& meta, const KVPairs<float>& data,
                         KVServer<float>* server) {
  absl::MutexLock lock(&exec_mu_);
  Execute(meta, data, server);
}

void TableServer::Execute(const KVMeta& meta, const KVPairs<float>& data,
                          KVServer<float>* server) {
  if (meta.clock_advance) {
    HandleClock(meta, server);
    return;
  }
  AdvanceTableClocks();
  auto it = tables_.find(meta.table_id);
  if (it == tables_.end()) {
    std::vector<int> ids;
    for (const auto& [id, table] : tables_) ids.push_back(id);
    std::sort(ids.begin(), ids.end());
    server
        ->ResponseError(meta,
                        absl::NotFoundError(absl::StrCat(
                            "table ", meta.table_id, " is not served (tables: ",
                            absl::StrJoin(ids, ", "), ")")))
        .IgnoreError();
    return;
  }
  Table* table = it->second.get();
  if (meta.push) {
    absl::Status s = ApplyPush(table, data);
    if (!s.ok()) {
      LOG_EVERY_T(WARNING, 1.0)
          << "push from node " << meta.sender << ": " << s;
      server->ResponseError(meta, s).IgnoreError();
      return;
    }
  }
  if (!meta.pull) {
    server->Response(meta).IgnoreError();
    return;
  }
  int64_t min_clock;
  {
    absl::MutexLock lock(&mu_);
    min_clock = min_clock_;
    if (MustHold(meta.clock, min_clock)) {
      if (held_.size() < options_.max_held_pulls) {
        held_.push_back(HeldPull{meta, data.keys});
        if (held_gauge_ != nullptr) held_gauge_->Set(held_.size());
        return;
      }
    }
  }
  if (MustHold(meta.clock, min_clock)) {
    server
        ->ResponseError(meta, absl::ResourceExhaustedError(absl::StrCat(
                                  "more than ", options_.max_held_pulls,
                                  " pulls wait for slower workers")))
        .IgnoreError();
    return;
  }
  AnswerPull(meta, data.keys, table, server, min_clock);
}

absl::Status TableServer::ApplyPush(Table* table, const KVPairs<float>& data) {
  for (int len : data.lens) {
    if (len != table->dim()) {
      return absl::InvalidArgumentError(
          absl::StrCat("push to table ", table->id(), " has a key with ", len,
                       " values; the table's dim is ", table->dim()));
    }
  }
  // One such value would make the row (and every later pull of it) NaN.
  const int64_t bad =
      FindUnsafeValue(absl::MakeConstSpan(data.vals.data(), data.vals.size()),
                      kMaxGradientMagnitude);
  if (bad >= 0) {
    if (rejected_pushes_ != nullptr) rejected_pushes_->Increment();
    const size_t key = static_cast<size_t>(bad) / table->dim();
    return absl::InvalidArgumentError(absl::StrCat(
        "push to ", table_names_.at(table->id()), " refused: gradient ",
        data.vals[bad], " of key ", key < data.keys.size() ? data.keys[key] : 0,
        " is NaN, infinite or above ", kMaxGradientMagnitude,
        " in magnitude (the run diverged)"));
  }
  return table->Push(absl::MakeConstSpan(data.keys.data(), data.keys.size()),
                     absl::MakeConstSpan(data.vals.data(), data.vals.size()),
                     runner_);
}

void TableServer::AnswerPull(const KVMeta& meta, const SArray<Key>& keys,
                             Table* table, KVServer<float>* server,
                             int64_t min_clock) {
  KVPairs<float> out;  // the answer carries values only
  out.vals = SArray<float>(keys.size() * table->dim());
  absl::Status s =
      table->Pull(absl::MakeConstSpan(keys.data(), keys.size()),
                  absl::MakeSpan(out.vals.data(), out.vals.size()), runner_);
  if (!s.ok()) {
    LOG_EVERY_T(WARNING, 1.0) << "pull from node " << meta.sender << ": " << s;
    server->ResponseError(meta, s).IgnoreError();
    return;
  }
  absl::Status sent = server->Response(meta, out, min_clock);
  if (!sent.ok()) {
    LOG_EVERY_T(WARNING, 1.0) << "pull response: " << sent;
  }
}

bool TableServer::MustHold(int64_t clock, int64_t min_clock) const {
  return max_delay_ >= 0 && clock >= 0 && clock - max_delay_ > min_clock;
}

int64_t TableServer::ComputeMinClock() const {
  int64_t m = kAllWorkersLeft;
  for (int64_t c : clocks_) {
    if (c >= 0) m = std::min(m, c);
  }
  return m;
}

void TableServer::HandleClock(const KVMeta& meta, KVServer<float>* server) {
  const int rank = IdToRank(meta.sender);
  if (!IsWorkerId(meta.sender) || rank >= num_workers_ || meta.clock < -1) {
    server
        ->ResponseError(meta,
                        absl::InvalidArgumentError(absl::StrCat(
                            "clock ", meta.clock, " from node ", meta.sender,
                            ": not a worker of this job or below -1")))
        .IgnoreError();
    return;
  }
  int64_t min_clock;
  {
    absl::MutexLock lock(&mu_);
    int64_t& clock = clocks_[rank];
    if (meta.clock == -1) {
      clock = -1;
    } else if (clock != -1) {
      clock = std::max(clock, meta.clock);
    }
    UpdateMinClock();
    min_clock = min_clock_;
    if (min_clock_gauge_ != nullptr) {
      min_clock_gauge_->Set(static_cast<double>(min_clock));
    }
  }
  VLOG(2) << "worker " << rank << " clock " << meta.clock << ", min clock "
          << min_clock;
  ReleaseHeld(server, min_clock);
  AdvanceTableClocks();  // before the answer: the clock's evictions are done
  server->Response(meta).IgnoreError();
}

void TableServer::UpdateMinClock() {
  const int64_t before = min_clock_;
  min_clock_ = ComputeMinClock();
  if (before != kAllWorkersLeft && min_clock_ != kAllWorkersLeft &&
      min_clock_ > before) {
    pending_clocks_ += min_clock_ - before;
  }
}

void TableServer::AdvanceTableClocks() {
  int64_t clocks;
  {
    absl::MutexLock lock(&mu_);
    clocks = std::exchange(pending_clocks_, 0);
  }
  if (clocks == 0) return;
  for (auto& entry : tables_) entry.second->AdvanceClock(clocks, runner_);
}

int64_t TableServer::DropWorker(int rank, KVServer<float>* server) {
  if (rank < 0 || rank >= num_workers_) return -1;
  absl::MutexLock exec(&exec_mu_);
  int64_t before;
  int64_t min_clock;
  {
    absl::MutexLock lock(&mu_);
    before = clocks_[rank];
    clocks_[rank] = -1;
    UpdateMinClock();
    min_clock = min_clock_;
    if (min_clock_gauge_ != nullptr) {
      min_clock_gauge_->Set(static_cast<double>(min_clock));
    }
  }
  LOG(INFO) << "worker " << rank << " died at clock " << before
            << "; min clock now " << min_clock;
  ReleaseHeld(server, min_clock);
  return before;
}

void TableServer::ReleaseHeld(KVServer<float>* server, int64_t min_clock) {
  std::vector<HeldPull> ready;
  {
    absl::MutexLock lock(&mu_);
    auto keep = std::stable_partition(
        held_.begin(), held_.end(),
        [&](const HeldPull& p) { return !MustHold(p.meta.clock, min_clock); });
    ready.assign(std::make_move_iterator(held_.begin()),
                 std::make_move_iterator(keep));
    held_.erase(held_.begin(), keep);
    if (held_gauge_ != nullptr) held_gauge_->Set(held_.size());
  }
  for (const HeldPull& p : ready) {
    AnswerPull(p.meta, p.keys, tables_.at(p.meta.table_id).get(), server,
               min_clock);
  }
}

absl::Status TableServer::WriteModel(const std::string& path) const {
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "w");
  if (f == nullptr) {
    return absl::UnavailableError(absl::StrCat(
        "cannot write the model to ", tmp, ": ", std::strerror(errno)));
  }
  std::vector<int> ids;
  for (const auto& [id, table] : tables_) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  for (int id : ids) {
    const Table& t = *tables_.at(id);
    t.ForEachRow([&](uint64_t key, const float* w) {
      std::fprintf(f, "%d %llu", id, static_cast<unsigned long long>(key));
      for (int j = 0; j < t.dim(); ++j) std::fprintf(f, " %.9g", w[j]);
      std::fputc('\n', f);
    });
  }
  const bool ok = !std::ferror(f);
  if (std::fclose(f) != 0 || !ok || std::rename(tmp.c_str(), path.c_str())) {
    std::remove(tmp.c_str());
    return absl::UnavailableError(absl::StrCat(
        "cannot write the model to ", path, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace petrel
