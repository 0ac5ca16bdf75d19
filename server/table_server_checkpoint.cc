// TableServer's checkpoints: saving its share of every table and loading
// any server count's checkpoint (server/table_server.h). Apart from
// table_server.cc, which handles requests.
#include <algorithm>
#include <cstring>
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

absl::Status TableServer::LoadCheckpoint(const std::string& dir,
                                         const pb::CheckpointManifest& manifest,
                                         const KeyRangeMap& ranges, int my_rank,
                                         bool with_state) {
  const std::vector<pb::CheckpointTable> tables = CheckpointTables();
  PETREL_RETURN_IF_ERROR(Annotate(CheckCompatible(manifest, tables, with_state),
                                  absl::StrCat("checkpoint ", dir)));
  // Room for the rows this server will own, as the share of the key
  // ranges it owns predicts.
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
  // The files that may hold rows this server owns; a signal stops the load
  // between their chunks (about 4 MiB each).
  std::vector<const pb::CheckpointFile*> mine;
  uint64_t rows = 0;
  for (const pb::CheckpointFile& file : manifest.files()) {
    // An unknown table cannot happen (CheckCompatible).
    if (tables_.count(file.table_id()) == 0 ||
        !MayHoldMyKeys(manifest, file.server_rank(), ranges, my_rank)) {
      continue;
    }
    mine.push_back(&file);
    rows += file.rows();
  }
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

}  // namespace petrel
