// TableServer's checkpoints: saving its share of every table and loading
// any server count's checkpoint (server/table_server.h). Apart from
// table_server.cc, which handles requests.
#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

#include "base/status_macros.h"
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
  table.ForEachStoredRow([&](uint64_t key, const float* row) {
    if (!status.ok() || ranges.OwnerOf(key) != my_rank) return;
    status = writer->Append(key, row);
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
  std::vector<pb::CheckpointFile> files;
  for (const pb::CheckpointTable& t : CheckpointTables()) {
    const std::string path =
        absl::StrCat(dir, "/", TableFileName(t.id(), my_rank));
    PETREL_ASSIGN_OR_RETURN(
        pb::CheckpointFile file,
        SaveTable(*tables_.at(t.id()), path, ranges, my_rank));
    file.set_server_rank(my_rank);
    files.push_back(file);
  }
  return files;
}

absl::Status TableServer::LoadCheckpoint(const std::string& dir,
                                         const pb::CheckpointManifest& manifest,
                                         const KeyRangeMap& ranges, int my_rank,
                                         bool with_state) {
  const std::vector<pb::CheckpointTable> tables = CheckpointTables();
  PETREL_RETURN_IF_ERROR(Annotate(CheckCompatible(manifest, tables, with_state),
                                  absl::StrCat("checkpoint ", dir)));
  // Scratch for the rows of a chunk this server owns.
  std::vector<uint64_t> keys;
  std::vector<float> values;
  std::vector<uint32_t> owners;
  for (const pb::CheckpointFile& file : manifest.files()) {
    const std::string path = absl::StrCat(dir, "/", file.name());
    auto it = tables_.find(file.table_id());
    if (it == tables_.end()) continue;  // CheckCompatible: cannot happen
    Table* table = it->second.get();
    absl::Status s = ReadTableFile(
        path, file,
        [&](const TableFileInfo& info, absl::Span<const uint64_t> chunk_keys,
            absl::Span<const float> chunk_values) -> absl::Status {
          if (info.dim != table->dim() ||
              (with_state && info.stride != table->stride())) {
            return absl::DataLossError(absl::StrCat(
                path, ": dim ", info.dim, " and stride ", info.stride,
                " differ from the manifest's table ", table->id()));
          }
          const size_t stride = static_cast<size_t>(info.stride);
          owners.resize(chunk_keys.size());
          ranges.OwnersOf(chunk_keys.data(), chunk_keys.size(), owners.data());
          keys.clear();
          values.clear();
          for (size_t i = 0; i < chunk_keys.size(); ++i) {
            if (owners[i] != static_cast<uint32_t>(my_rank)) continue;
            keys.push_back(chunk_keys[i]);
            const float* row = chunk_values.data() + i * stride;
            values.insert(values.end(), row, row + stride);
          }
          return Annotate(
              table->SetRows(keys, values, info.stride, with_state, runner_),
              path);
        });
    PETREL_RETURN_IF_ERROR(s);
  }
  return absl::OkStatus();
}

}  // namespace petrel
