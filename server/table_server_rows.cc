// TableServer's rows in and out, apart from table_server.cc, which handles
// requests: checkpoints (saving its share of every table and loading any
// server count's checkpoint, server/table_server.h), and the range copy to
// a replacement server (docs/failures.md, "Replacement servers"): the
// snapshot a live primary sends and the install on the newcomer. KVServer
// (kv/replication/range_copy.cc) carries the copy's entries and the
// duplicate-detection state; this file decides what a training server's
// ranges hold.
//
// The range copy's entries are KVPairs<float>, one key and lens[i] floats
// each, whose first float tells what the entry is:
//   t >= 0   a row of table t: the key, then the row's stride() floats
//            (weights, then the optimizer's state), as Table's
//            ForEachStoredBlock gives them to checkpoints and SetRows
//            takes them back;
//   -1       table `key`'s admission sketch, one float per counter;
//   -2       the workers' clocks, two floats per rank (see EncodeClock).
// Each entry stands alone, so the copy may be cut between any two.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

#include "base/startup_progress.h"
#include "base/status_macros.h"
#include "checkpoint/admission_file.h"
#include "checkpoint/checkpoint_dir.h"
#include "checkpoint/table_file.h"
#include "server/table_server.h"

namespace petrel {
namespace {

pb::OptimizerProto::Kind KindToProto(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::kSgd:
      return pb::OptimizerProto::KIND_SGD;
    case OptimizerKind::kAdagrad:
      return pb::OptimizerProto::KIND_ADAGRAD;
    case OptimizerKind::kAdam:
      return pb::OptimizerProto::KIND_ADAM;
    case OptimizerKind::kFtrl:
      return pb::OptimizerProto::KIND_FTRL;
  }
  LOG(FATAL) << "unknown optimizer kind " << static_cast<int>(kind);
}

// Whether the file that server `file_rank` wrote may hold keys that
// `ranges` gives to `my_rank`. A server writes only the keys its own map
// (the manifest's) gave it, so the file holds keys of the hash ranges the
// manifest gives `file_rank`; false when none of them meets one of
// `my_rank`'s ranges (e.g. every other server's file when the map is
// unchanged). True when the manifest has no map.
bool MayHoldMyKeys(const pb::CheckpointManifest& manifest, int file_rank,
                   const KeyRangeMap& ranges, int my_rank) {
  const auto& saved = manifest.range_begins();
  if (saved.empty() || saved.size() != manifest.range_owners().size()) {
    return true;
  }
  using End = unsigned __int128;  // a range may end at 2^64
  const std::vector<uint64_t>& mine = ranges.begins();
  auto saved_end = [&](int i) -> End {
    return i + 1 < saved.size() ? End{saved[i + 1]} : End{1} << 64;
  };
  auto my_end = [&](size_t j) -> End {
    return j + 1 < mine.size() ? End{mine[j + 1]} : End{1} << 64;
  };
  // Both lists cover [0, 2^64) in order: walk them together.
  for (int i = 0, j = 0;
       i < saved.size() && j < static_cast<int>(mine.size());) {
    if (manifest.range_owners(i) == file_rank &&
        ranges.owners()[j] == my_rank &&
        std::max<End>(saved[i], mine[j]) < std::min(saved_end(i), my_end(j))) {
      return true;
    }
    if (saved_end(i) < my_end(j)) {
      ++i;
    } else {
      ++j;
    }
  }
  return false;
}

// Writes `table`'s rows owned by `my_rank` to `path`.
absl::StatusOr<pb::CheckpointFile> SaveTable(const Table& table,
                                             const std::string& path,
                                             const KeyRangeMap& ranges,
                                             int my_rank) {
  TableFileInfo info;
  info.table_id = table.id();
  info.dim = table.dim();
  info.stride = table.stride();
  info.optimizer = KindToProto(table.options().optimizer.kind);
  PETREL_ASSIGN_OR_RETURN(std::unique_ptr<TableFileWriter> writer,
                          TableFileWriter::Create(path, info));
  absl::Status status;
  const size_t stride = static_cast<size_t>(table.stride());
  const uint32_t me = static_cast<uint32_t>(my_rank);
  std::vector<uint32_t> owners;
  table.ForEachStoredBlock(
      [&](const uint64_t* keys, const float* rows, size_t n) {
        owners.resize(n);
        ranges.OwnersOf(keys, n, owners.data());
        // Runs of rows this server owns, each appended at once.
        for (size_t i = 0; i < n && status.ok();) {
          size_t end = i;
          while (end < n && owners[end] == me) ++end;
          if (end > i) {
            status = writer->AppendRows(keys + i, rows + i * stride, end - i);
          }
          for (i = end; i < n && owners[i] != me; ++i) {
          }
        }
      });
  PETREL_RETURN_IF_ERROR(status);
  return writer->Finish();
}

}  // namespace

std::vector<pb::CheckpointTable> TableServer::CheckpointTables() const {
  std::vector<pb::CheckpointTable> out;
  for (const auto& [id, table] : tables_) {
    pb::CheckpointTable t;
    t.set_id(id);
    t.set_dim(table->dim());
    t.set_stride(table->stride());
    t.set_dense(table->dense());
    t.set_num_keys(table->dense() ? table->options().num_keys : 0);
    t.set_optimizer(KindToProto(table->options().optimizer.kind));
    out.push_back(t);
  }
  std::sort(out.begin(), out.end(),
            [](const pb::CheckpointTable& a, const pb::CheckpointTable& b) {
              return a.id() < b.id();
            });
  return out;
}

absl::StatusOr<std::vector<pb::CheckpointFile>> TableServer::SaveCheckpoint(
    const std::string& dir, const KeyRangeMap& ranges, int my_rank) const {
  absl::MutexLock exec(&exec_mu_);
  std::vector<pb::CheckpointFile> files;
  for (const pb::CheckpointTable& t : CheckpointTables()) {
    const std::string path =
        absl::StrCat(dir, "/", TableFileName(t.id(), my_rank));
    PETREL_ASSIGN_OR_RETURN(
        pb::CheckpointFile file,
        SaveTable(*tables_.at(t.id()), path, ranges, my_rank));
    file.set_server_rank(my_rank);
    files.push_back(file);
    const Table& table = *tables_.at(t.id());
    if (table.options().admit_after > 1) {
      PETREL_RETURN_IF_ERROR(WriteAdmissionFile(
          absl::StrCat(dir, "/", AdmissionFileName(t.id(), my_rank)), t.id(),
          table.AdmissionCounters()));
    }
  }
  return files;
}

absl::Status TableServer::LoadAdmissionCounters(
    const std::string& dir, const pb::CheckpointManifest& manifest,
    const KeyRangeMap& ranges, int my_rank) {
  for (const auto& [id, table] : tables_) {
    if (table->options().admit_after <= 1) continue;
    // The counters of every server whose keys this one now owns, merged by
    // their maximum: a count-min sketch then still never under-counts. With
    // the key map unchanged that is this server's own file alone.
    std::vector<uint16_t> merged;
    for (int rank = 0; rank < manifest.num_servers(); ++rank) {
      if (!MayHoldMyKeys(manifest, rank, ranges, my_rank)) continue;
      const std::string path =
          absl::StrCat(dir, "/", AdmissionFileName(id, rank));
      absl::StatusOr<std::vector<uint16_t>> counters =
          ReadAdmissionFile(path, id);
      if (absl::IsNotFound(counters.status())) continue;  // older checkpoint
      PETREL_RETURN_IF_ERROR(counters.status());
      if (merged.empty()) merged.assign(counters->size(), 0);
      if (counters->size() != merged.size() ||
          counters->size() != table->AdmissionCounters().size()) {
        LOG(WARNING) << path << ": " << counters->size()
                     << " admission counters do not fit table " << id
                     << " (admission_counters or the shard count changed); "
                        "its admission counts start over";
        merged.clear();
        break;
      }
      for (size_t i = 0; i < merged.size(); ++i) {
        merged[i] = std::max(merged[i], (*counters)[i]);
      }
    }
    if (!merged.empty()) {
      PETREL_RETURN_IF_ERROR(table->SetAdmissionCounters(merged));
    }
  }
  return absl::OkStatus();
}

absl::Status TableServer::ReserveForMyShare(
    const pb::CheckpointManifest& manifest, const KeyRangeMap& ranges,
    int my_rank) {
  size_t my_ranges = 0;
  for (int32_t owner : ranges.owners()) my_ranges += owner == my_rank;
  for (const auto& [id, table] : tables_) {
    uint64_t rows = 0;
    for (const pb::CheckpointFile& f : manifest.files()) {
      if (f.table_id() == id) rows += f.rows();
    }
    PETREL_RETURN_IF_ERROR(
        table->Reserve(rows * my_ranges / ranges.owners().size()));
  }
  return absl::OkStatus();
}

std::vector<const pb::CheckpointFile*> TableServer::FilesToLoad(
    const pb::CheckpointManifest& manifest, const KeyRangeMap& ranges,
    int my_rank, uint64_t* rows) const {
  std::vector<const pb::CheckpointFile*> mine;
  for (const pb::CheckpointFile& file : manifest.files()) {
    // An unknown table cannot happen (CheckCompatible).
    if (tables_.count(file.table_id()) == 0 ||
        !MayHoldMyKeys(manifest, file.server_rank(), ranges, my_rank)) {
      continue;
    }
    mine.push_back(&file);
    *rows += file.rows();
  }
  return mine;
}

absl::Status TableServer::LoadCheckpoint(const std::string& dir,
                                         const pb::CheckpointManifest& manifest,
                                         const KeyRangeMap& ranges, int my_rank,
                                         bool with_state) {
  const std::vector<pb::CheckpointTable> tables = CheckpointTables();
  PETREL_RETURN_IF_ERROR(Annotate(CheckCompatible(manifest, tables, with_state),
                                  absl::StrCat("checkpoint ", dir)));
  PETREL_RETURN_IF_ERROR(ReserveForMyShare(manifest, ranges, my_rank));
  // Before Start the server's own pool runs everything inline: a pool of
  // the same size applies each chunk's rows over the shards in parallel.
  ShardPool pool(options_.num_threads);
  ParallelRunner runner;
  if (options_.num_threads > 1 && pool.Start().ok()) {
    runner = [&pool](int n, const std::function<void(int)>& fn) {
      pool.Run(n, fn);
    };
  }
  // Scratch for the rows of a chunk this server owns.
  std::vector<uint64_t> keys;
  std::vector<float> values;
  std::vector<uint32_t> owners;
  const uint32_t me = static_cast<uint32_t>(my_rank);
  // A signal stops the load between the files' chunks (about 4 MiB each).
  uint64_t rows = 0;
  const std::vector<const pb::CheckpointFile*> mine =
      FilesToLoad(manifest, ranges, my_rank, &rows);
  StartupProgress* progress = options_.progress;
  if (progress != nullptr) {
    progress->Begin(absl::StrCat("loading checkpoint ", dir, " (", mine.size(),
                                 " files, ", rows, " rows)"),
                    std::max<uint64_t>(rows, 1));
  }
  for (const pb::CheckpointFile* file : mine) {
    const std::string path = absl::StrCat(dir, "/", file->name());
    Table* table = tables_.at(file->table_id()).get();
    absl::Status s = ReadTableFile(
        path, *file,
        [&](const TableFileInfo& info, absl::Span<const uint64_t> chunk_keys,
            absl::Span<const float> chunk_values) -> absl::Status {
          if (progress != nullptr) {
            if (progress->cancelled()) return progress->CancelledError();
            progress->Advance(chunk_keys.size());
          }
          if (info.dim != table->dim() ||
              (with_state && info.stride != table->stride())) {
            return absl::DataLossError(absl::StrCat(
                path, ": dim ", info.dim, " and stride ", info.stride,
                " differ from the manifest's table ", table->id()));
          }
          const size_t stride = static_cast<size_t>(info.stride);
          const size_t n = chunk_keys.size();
          owners.resize(n);
          ranges.OwnersOf(chunk_keys.data(), n, owners.data());
          if (std::all_of(owners.begin(), owners.end(),
                          [me](uint32_t owner) { return owner == me; })) {
            return Annotate(table->SetRows(chunk_keys, chunk_values,
                                           info.stride, with_state, runner),
                            path);
          }
          keys.clear();
          values.clear();
          for (size_t i = 0; i < n; ++i) {
            if (owners[i] != me) continue;
            keys.push_back(chunk_keys[i]);
            const float* row = chunk_values.data() + i * stride;
            values.insert(values.end(), row, row + stride);
          }
          return Annotate(
              table->SetRows(keys, values, info.stride, with_state, runner),
              path);
        });
    PETREL_RETURN_IF_ERROR(s);
  }
  if (progress != nullptr) progress->End();
  return LoadAdmissionCounters(dir, manifest, ranges, my_rank);
}

namespace {

constexpr float kAdmissionTag = -1;
constexpr float kClocksTag = -2;
// A clock c >= -1 travels as c + 1 = hi * 2^24 + lo: floats hold both
// halves exactly.
constexpr int64_t kHalf = int64_t{1} << 24;

void EncodeClock(int64_t clock, std::vector<float>* out) {
  const int64_t v = clock + 1;
  out->push_back(static_cast<float>(v / kHalf));
  out->push_back(static_cast<float>(v % kHalf));
}

// Whether floats [from, to) are whole numbers in [0, hi].
bool AllWhole(const float* from, const float* to, float hi) {
  return std::all_of(from, to, [hi](float f) {
    return f >= 0 && f <= hi &&
           f == static_cast<float>(static_cast<int64_t>(f));
  });
}

int64_t DecodeClock(const float* f) {
  return static_cast<int64_t>(f[0]) * kHalf + static_cast<int64_t>(f[1]) - 1;
}

// Appends one entry to the lists the snapshot is built in.
struct EntryLists {
  std::vector<Key> keys;
  std::vector<float> vals;
  std::vector<int> lens;
  void Add(Key key, float tag, const float* data, size_t n) {
    keys.push_back(key);
    vals.push_back(tag);
    vals.insert(vals.end(), data, data + n);
    lens.push_back(static_cast<int>(n + 1));
  }
};

}  // namespace

KVPairs<float> TableServer::SnapshotRanges(
    const std::function<bool(Key)>& keep) const {
  absl::MutexLock exec(&exec_mu_);
  EntryLists out;
  std::vector<int> ids;
  for (const auto& entry : tables_) ids.push_back(entry.first);
  std::sort(ids.begin(), ids.end());
  for (int id : ids) {
    const Table& table = *tables_.at(id);
    const size_t stride = static_cast<size_t>(table.stride());
    table.ForEachStoredBlock([&](const uint64_t* keys, const float* rows,
                                 size_t n) {
      for (size_t i = 0; i < n; ++i) {
        if (keep(keys[i])) {
          out.Add(keys[i], static_cast<float>(id), rows + i * stride, stride);
        }
      }
    });
    if (table.options().admit_after > 1) {
      const std::vector<uint16_t> counters = table.AdmissionCounters();
      const std::vector<float> f(counters.begin(), counters.end());
      out.Add(static_cast<Key>(id), kAdmissionTag, f.data(), f.size());
    }
  }
  std::vector<float> clocks;
  {
    absl::MutexLock lock(&mu_);
    for (int64_t c : clocks_) EncodeClock(c, &clocks);
  }
  out.Add(0, kClocksTag, clocks.data(), clocks.size());
  KVPairs<float> pairs;
  pairs.keys = SArray<Key>(std::move(out.keys));
  pairs.vals = SArray<float>(std::move(out.vals));
  pairs.lens = SArray<int>(std::move(out.lens));
  return pairs;
}

absl::Status TableServer::CheckCopiedEntries(
    const KVPairs<float>& entries) const {
  const size_t n = entries.keys.size();
  if (entries.lens.size() != n) {
    return absl::InvalidArgumentError(absl::StrCat(
        "range copy: ", entries.lens.size(), " lengths for ", n, " keys"));
  }
  size_t total = 0;
  for (size_t i = 0; i < n; ++i) {
    const int len = entries.lens[i];
    if (len < 1 || total + len > entries.vals.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("range copy: entry ", i, " of ", len,
                       " floats overruns ", entries.vals.size()));
    }
    const float* entry = entries.vals.data() + total;
    const float tag = entry[0];
    bool fits = false;
    if (tag >= 0 && tag < 1e9f) {
      auto it = tables_.find(static_cast<int>(tag));
      fits = it != tables_.end() && static_cast<float>(it->first) == tag &&
             len == 1 + it->second->stride();
    } else if (tag == kAdmissionTag) {
      fits = entries.keys[i] < (Key{1} << 31) &&
             tables_.contains(static_cast<int>(entries.keys[i])) &&
             AllWhole(entry + 1, entry + len, 65535.0f);
    } else if (tag == kClocksTag) {
      fits = len == 1 + 2 * num_workers_ &&
             AllWhole(entry + 1, entry + len, static_cast<float>(kHalf));
    }
    if (!fits) {
      return absl::InvalidArgumentError(absl::StrCat(
          "range copy: entry ", i, " (key ", entries.keys[i], ", tag ", tag,
          ", ", len, " floats) does not fit this server's tables"));
    }
    total += static_cast<size_t>(len);
  }
  return absl::OkStatus();
}

absl::Status TableServer::MergeAdmission(Table* table, const float* entry,
                                         size_t len) {
  std::vector<uint16_t> merged = table->AdmissionCounters();
  if (merged.size() != len - 1) {
    LOG(WARNING) << "range copy: " << len - 1
                 << " admission counters do not fit table " << table->id()
                 << " (" << merged.size()
                 << "; admission_counters or the shard count differ); "
                    "its admission counts of the copied keys start over";
    return absl::OkStatus();
  }
  for (size_t c = 0; c < merged.size(); ++c) {
    merged[c] = std::max(merged[c], static_cast<uint16_t>(entry[1 + c]));
  }
  return table->SetAdmissionCounters(merged);
}

void TableServer::MergeClocks(const float* entry) {
  // min_clock_ rises without counting clocks for the TTLs: the copied rows
  // are as fresh as the source's.
  absl::MutexLock lock(&mu_);
  for (int r = 0; r < num_workers_; ++r) {
    const int64_t c = DecodeClock(entry + 1 + 2 * r);
    int64_t& mine = clocks_[r];
    if (c == -1) {
      mine = -1;
    } else if (mine != -1) {
      mine = std::max(mine, c);
    }
  }
  min_clock_ = ComputeMinClock();
  if (min_clock_gauge_ != nullptr) {
    min_clock_gauge_->Set(static_cast<double>(min_clock_));
  }
}

absl::Status TableServer::InstallRanges(const KVPairs<float>& entries,
                                        KVServer<float>* server) {
  absl::MutexLock exec(&exec_mu_);
  PETREL_RETURN_IF_ERROR(CheckCopiedEntries(entries));
  // Runs of rows of one table are set at once.
  std::vector<uint64_t> keys;
  std::vector<float> values;
  Table* run_table = nullptr;
  auto flush = [&]() -> absl::Status {
    if (run_table == nullptr || keys.empty()) return absl::OkStatus();
    absl::Status s = run_table->SetRows(keys, values, run_table->stride(),
                                        /*with_state=*/true, runner_);
    keys.clear();
    values.clear();
    return s;
  };
  bool clocks_changed = false;
  size_t at = 0;
  for (size_t i = 0; i < entries.keys.size(); ++i) {
    const float* entry = entries.vals.data() + at;
    const size_t len = static_cast<size_t>(entries.lens[i]);
    at += len;
    const float tag = entry[0];
    if (tag >= 0) {
      Table* table = tables_.at(static_cast<int>(tag)).get();
      if (table != run_table) {
        PETREL_RETURN_IF_ERROR(flush());
        run_table = table;
      }
      keys.push_back(entries.keys[i]);
      values.insert(values.end(), entry + 1, entry + len);
      continue;
    }
    PETREL_RETURN_IF_ERROR(flush());
    if (tag == kAdmissionTag) {
      PETREL_RETURN_IF_ERROR(MergeAdmission(
          tables_.at(static_cast<int>(entries.keys[i])).get(), entry, len));
      continue;
    }
    MergeClocks(entry);
    clocks_changed = true;
  }
  PETREL_RETURN_IF_ERROR(flush());
  if (clocks_changed && server != nullptr) {
    ReleaseHeld(server, min_clock());
  }
  return absl::OkStatus();
}

void TableServer::EnableRangeCopy(KVServer<float>* server) {
  server->set_range_copy(
      [this](const std::function<bool(Key)>& keep) {
        return SnapshotRanges(keep);
      },
      [this, server](const KVPairs<float>& entries) {
        return InstallRanges(entries, server);
      });
}

}  // namespace petrel
