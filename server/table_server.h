// TableServer: the KVServer<float> request handler of training jobs. It holds
// one Table per table of the job config (server/table_config.h gives the
// defaults), applies pushes with each table's optimizer, answers pulls, and
// enforces bounded-delay consistency.
//
//   KVServer<float> kv(/*app_id=*/0, postoffice);
//   auto tables = TableServer::Create(job, num_workers, postoffice->metrics());
//   PETREL_RETURN_IF_ERROR(tables.status());
//   PETREL_RETURN_IF_ERROR((*tables)->Start());
//   kv.set_request_handler((*tables)->handler());
//   PETREL_RETURN_IF_ERROR(kv.Start());
//
// Requests (KVMeta):
//   push       table_id, keys and dim values per key (lens empty or all dim):
//              applied before the handler returns, in parallel over the
//              table's shards when large (>= parallel_min_keys keys).
//   pull       answered with the keys' weights and min_clock, or held (see
//              below). A sparse table creates missing rows.
//   clock      clock_advance, no keys: sets the sender's clock (monotone;
//              -1 = the worker left, for good) and acknowledges.
//   An unknown table, a bad layout or a dense key out of range is answered
//   with ResponseError (the worker's Wait returns it), never applied.
//
// Bounded delay with tau = consistency.max_delay: each worker's clock is the
// number of batches it completed (workers not heard from yet are at 0). A
// pull with clock c >= 0 is answered once min_clock >= c - tau, where
// min_clock is the smallest clock of the workers still in the job
// (kAllWorkersLeft when none is). Until then it is held, without a thread
// waiting: clock requests release the held pulls they satisfy, in arrival
// order. tau = -1 (infinity) or a pull clock of -1 never waits.
//
// Thread safety: what runs a request against the tables (Handle and the
// handler(), DropWorker, SaveCheckpoint, SnapshotRanges, InstallRanges)
// may be called from any thread: the TableServer runs one at a time
// itself (its callers need not, though KVServer already calls the handler
// one request at a time). min_clock() and num_held_pulls() are
// thread-safe; table(), mutable_table(), RebalanceMemory, WriteModel and
// LoadCheckpoint must not run concurrently with those. Start and Stop from
// the owner; Stop is idempotent and the destructor calls it.
#ifndef PETREL_SERVER_TABLE_SERVER_H_
#define PETREL_SERVER_TABLE_SERVER_H_

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

#include "base/metrics.h"
#include "base/shard_pool.h"
#include "base/startup_progress.h"
#include "cluster/key_range_map.h"
#include "kv/kv_server.h"
#include "proto/checkpoint.pb.h"
#include "proto/job.pb.h"
#include "server/server_memory_budget.h"
#include "server/table.h"

namespace petrel {

struct TableServerOptions {
  // Threads applying a large request (the handler's thread included).
  // Default 0 = std::thread::hardware_concurrency(); 1..256.
  int num_threads = 0;
  // Internal shards per sparse table. Default 0 = 2 * num_threads; 1..1024.
  int num_shards = 0;
  // Requests with fewer keys run on the handler's thread. Default 4096.
  size_t parallel_min_keys = 4096;
  // Most pulls held for the bound at once; more are answered with
  // ResourceExhausted. Default 65536.
  size_t max_held_pulls = 65536;
  // Rows per slab of every table. Default 0: 2 MiB slabs (huge pages).
  int rows_per_slab = 0;
  // Under a server memory cap: requests between two moves of the tables'
  // shares to their use (server/server_memory_budget.h). 0: the shares
  // stay as made. Default 1024.
  uint64_t memory_rebalance_requests = 1024;
  // Told how far the dense tables' fill and a checkpoint load got; its
  // Cancel stops Create or LoadCheckpoint with Cancelled. May be null.
  // Default null.
  StartupProgress* progress = nullptr;
};

class TableServer {
 public:
  // The min_clock reported once every worker has left.
  static constexpr int64_t kAllWorkersLeft =
      std::numeric_limits<int64_t>::max();

  // Builds the tables of `job` (InvalidArgument naming the bad field). With
  // job.server.memory_cap_mib, every sparse table's memory cap becomes its
  // share of the server's cap (server/server_memory_budget.h).
  // `num_workers` >= 1 is the job's worker count (ranks 0..num_workers-1
  // send clocks). `metrics` may be null; when set it must outlive this.
  static absl::StatusOr<std::unique_ptr<TableServer>> Create(
      const pb::JobConfig& job, int num_workers, MetricsRegistry* metrics,
      TableServerOptions options = {});
  ~TableServer();
  TableServer(const TableServer&) = delete;
  TableServer& operator=(const TableServer&) = delete;

  // Starts the shard threads. Before Start, everything runs inline.
  absl::Status Start();
  void Stop();

  // The KVServer handler: calls Handle. This object must outlive its use.
  KVServer<float>::Handler handler();
  void Handle(const KVMeta& meta, const KVPairs<float>& data,
              KVServer<float>* server);

  // Worker `rank` died (the scheduler's kDropWorker): it leaves the clock
  // as if it had sent clock -1, and the held pulls that only it held back
  // are answered through `server`. Returns its clock before (-1 when it
  // had left, or for a rank not in 0..num_workers-1). Any thread.
  int64_t DropWorker(int rank, KVServer<float>* server);

  // The smallest clock of the workers still in the job.
  int64_t min_clock() const;
  size_t num_held_pulls() const;
  // tau; -1 = infinity.
  int64_t max_delay() const { return max_delay_; }
  // The table `id`, or null.
  const Table* table(int id) const;
  // One line per table, by id: its rows, bytes (and cap), admitted,
  // evicted and filtered counts on this server; under a server cap, a last
  // line with all the tables' bytes, the cap and the times the shares
  // moved. Not during requests.
  std::vector<std::string> DescribeMemory() const;
  // The bytes of all the tables (the sum of their MemoryBytes), and the
  // server's cap over them (0: none). Not during requests.
  uint64_t MemoryBytes() const;
  uint64_t memory_cap_bytes() const { return memory_cap_bytes_; }
  // Moves the sparse tables' shares of the server's cap to their use now
  // (the handler does every memory_rebalance_requests requests); whether
  // any moved. Not during requests.
  absl::StatusOr<bool> RebalanceMemory() { return memory_budget_->Rebalance(); }
  // The same, to change it directly (tools, tests): not concurrently with
  // Handle.
  Table* mutable_table(int id);
  // Writes every stored row of every table to `path`, one line each:
  // "TABLE_ID KEY W0 W1 ..." (dim weights). Written to PATH.tmp and renamed,
  // so a failure never leaves a partial file under `path`. Unavailable
  // naming the path when it cannot be written (e.g. a full disk). Not
  // concurrently with request handling: call after the van stopped.
  absl::Status WriteModel(const std::string& path) const;

  // Checkpoints (docs/checkpoints.md). The schema of every table, by id,
  // as a checkpoint manifest records it.
  std::vector<pb::CheckpointTable> CheckpointTables() const;
  // Writes this server's share of every table into checkpoint directory
  // `dir` (which must exist): the file TableFileName(id, my_rank) per table,
  // holding the stored rows of the keys `ranges` gives to `my_rank`, with
  // their optimizer state. Returns the files' manifest entries. Unavailable
  // naming the path and the reason when a file cannot be written (e.g. a
  // full disk); no file is left under its final name then. Any thread:
  // no request runs meanwhile.
  absl::StatusOr<std::vector<pb::CheckpointFile>> SaveCheckpoint(
      const std::string& dir, const KeyRangeMap& ranges, int my_rank) const;
  // Loads checkpoint `dir` (whose manifest is `manifest`, from
  // ReadManifest): reads every table file of the manifest, whatever number
  // of servers wrote it, and keeps the rows of the keys `ranges` gives to
  // `my_rank`, so a checkpoint of S servers restores onto any number. With
  // `with_state` rows take their optimizer state too; without, only their
  // weights (the state starts as for a new row). InvalidArgument naming the
  // mismatch, before anything is loaded, when the checkpoint does not fit
  // the job's tables (CheckCompatible); DataLoss naming the file when one is
  // corrupted or truncated; NotFound when one is missing. After an error
  // the tables are partly loaded: do not serve them. Cancelled when
  // options.progress is cancelled (checked between chunks of about 4 MiB).
  // Before Start.
  //
  // Tables with admit_after also save their admission counters
  // (checkpoint/admission_file.h) and load them back: a server takes the
  // maximum of the counters of the servers whose keys it now owns. A
  // checkpoint without them (older, or saved without admit_after) leaves
  // the counters at zero; counters of another size (admission_counters or
  // the shard count changed) are dropped with a warning.
  absl::Status LoadCheckpoint(const std::string& dir,
                              const pb::CheckpointManifest& manifest,
                              const KeyRangeMap& ranges, int my_rank,
                              bool with_state);

  // Range copy to a replacement server (server/table_server_rows.cc,
  // docs/failures.md "Replacement servers"). SnapshotRanges returns, as
  // one list of entries, every stored row of every table whose key `keep`
  // accepts (its stride() floats: weights and optimizer state, the
  // layout checkpoints save), each table's admission sketch and the
  // workers' clocks. InstallRanges sets such rows on this server (with
  // their state), merges the sketches and clocks by their maximum, and
  // answers the pulls the clocks release through `server`. Any split of
  // the entries installs the same way, in any number of calls. Any
  // thread, as Handle.
  KVPairs<float> SnapshotRanges(const std::function<bool(Key)>& keep) const;
  absl::Status InstallRanges(const KVPairs<float>& entries,
                             KVServer<float>* server);
  // Sets both on `server` (KVServer::set_range_copy). Before
  // server->Start(); this object must outlive it.
  void EnableRangeCopy(KVServer<float>* server);

 private:
  struct HeldPull {
    KVMeta meta;
    SArray<Key> keys;
  };

  TableServer(int num_workers, int64_t max_delay, TableServerOptions options,
              MetricsRegistry* metrics);
  // Handle's work, with exec_mu_ held.
  void Execute(const KVMeta& meta, const KVPairs<float>& data,
               KVServer<float>* server);
  void HandleClock(const KVMeta& meta, KVServer<float>* server);
  absl::Status LoadAdmissionCounters(const std::string& dir,
                                     const pb::CheckpointManifest& manifest,
                                     const KeyRangeMap& ranges, int my_rank);
  absl::Status ApplyPush(Table* table, const KVPairs<float>& data);
  void AnswerPull(const KVMeta& meta, const SArray<Key>& keys, Table* table,
                  KVServer<float>* server, int64_t min_clock);
  // True when a pull at `clock` must wait for slower workers.
  bool MustHold(int64_t clock, int64_t min_clock) const;
  // Answers the held pulls `min_clock` now allows.
  void ReleaseHeld(KVServer<float>* server, int64_t min_clock);
  // LoadCheckpoint's steps. Reserves room for the rows this server will
  // own, as the share of the key ranges it owns predicts.
  absl::Status ReserveForMyShare(const pb::CheckpointManifest& manifest,
                                 const KeyRangeMap& ranges, int my_rank);
  // The files of `manifest` that may hold rows this server owns, and their
  // rows in `*rows`.
  std::vector<const pb::CheckpointFile*> FilesToLoad(
      const pb::CheckpointManifest& manifest, const KeyRangeMap& ranges,
      int my_rank, uint64_t* rows) const;
  // InstallRanges' steps (table_server_rows.cc), with exec_mu_ held. The
  // layout of copied `entries`, checked before anything is set: each a
  // row of a table of this server, an admission sketch or the clocks.
  absl::Status CheckCopiedEntries(const KVPairs<float>& entries) const;
  // Merges a copied admission sketch (`len` floats at `entry`, its tag
  // first) into `table`'s by the maximum of each counter.
  absl::Status MergeAdmission(Table* table, const float* entry, size_t len);
  // Merges copied clocks (tag first) into this server's: a worker's is the
  // larger of both; one that left stays gone.
  void MergeClocks(const float* entry);
  int64_t ComputeMinClock() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Sets min_clock_ to ComputeMinClock() and counts its rise for the
  // tables' clock TTLs.
  void UpdateMinClock() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Hands the clocks counted so far to the tables (Table::AdvanceClock),
  // on the thread that handles requests.
  void AdvanceTableClocks();

  const int num_workers_;
  const int64_t max_delay_;
  const TableServerOptions options_;
  ShardPool pool_;
  ParallelRunner runner_;
  absl::flat_hash_map<int, std::unique_ptr<Table>> tables_;
  // "table 0 (optimizer FTRL)" per table, for errors; read-only after
  // Create.
  absl::flat_hash_map<int, std::string> table_names_;
  uint64_t memory_cap_bytes_ = 0;
  std::unique_ptr<ServerMemoryBudget> memory_budget_;
  Gauge* held_gauge_ = nullptr;
  Counter* rejected_pushes_ = nullptr;
  Gauge* min_clock_gauge_ = nullptr;

  // Held while a request runs against the tables (see Thread safety);
  // taken before mu_.
  mutable absl::Mutex exec_mu_;
  mutable absl::Mutex mu_ ABSL_ACQUIRED_AFTER(exec_mu_);
  // Per worker rank: its clock, or -1 once it left.
  std::vector<int64_t> clocks_ ABSL_GUARDED_BY(mu_);
  int64_t min_clock_ ABSL_GUARDED_BY(mu_) = 0;
  // Rises of min_clock_ the tables have not been told of.
  int64_t pending_clocks_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<HeldPull> held_ ABSL_GUARDED_BY(mu_);  // arrival order
};

}  // namespace petrel

#endif  // PETREL_SERVER_TABLE_SERVER_H_
