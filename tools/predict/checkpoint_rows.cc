#include "tools/predict/checkpoint_rows.h"

#include <cstring>
#include <numeric>
#include <utility>

#include "absl/strings/str_cat.h"

#include "base/status_macros.h"
#include "cluster/key_range_map.h"
#include "server/table_config.h"

namespace petrel {

absl::StatusOr<std::unique_ptr<CheckpointRows>> CheckpointRows::Load(
    const std::string& dir, const pb::CheckpointManifest& manifest) {
  const pb::JobConfig& job = manifest.job();
  PETREL_ASSIGN_OR_RETURN(std::vector<TableOptions> options,
                          TableOptionsFromJob(job));
  absl::flat_hash_map<int, Initializer> initializers;
  for (const TableOptions& t : options) {
    PETREL_ASSIGN_OR_RETURN(Initializer init,
                            Initializer::Create(t.initializer, t.id));
    initializers.emplace(t.id, init);
  }
  PETREL_ASSIGN_OR_RETURN(std::unique_ptr<TableServer> server,
                          TableServer::Create(job, /*num_workers=*/1,
                                              /*metrics=*/nullptr));
  // LoadCheckpoint refuses a checkpoint that does not fit the tables.
  PETREL_ASSIGN_OR_RETURN(KeyRangeMap one_server, KeyRangeMap::Uniform(1, 1));
  PETREL_RETURN_IF_ERROR(server->LoadCheckpoint(dir, manifest, one_server,
                                                /*my_rank=*/0,
                                                /*with_state=*/false));
  return std::unique_ptr<CheckpointRows>(
      new CheckpointRows(std::move(server), std::move(initializers)));
}

absl::Status CheckpointRows::Fill(int id, absl::Span<const uint64_t> keys,
                                  std::vector<float>* out) const {
  const Table* t = server_->table(id);
  auto init = initializers_.find(id);
  if (t == nullptr || init == initializers_.end()) {
    return absl::NotFoundError(
        absl::StrCat("the checkpoint has no table ", id));
  }
  const int dim = t->dim();
  out->resize(keys.size() * dim);
  float* dst = out->data();
  for (uint64_t key : keys) {
    if (const float* row = t->Find(key); row != nullptr) {
      std::memcpy(dst, row, dim * sizeof(float));
    } else if (t->dense()) {
      return absl::InvalidArgumentError(
          absl::StrCat("key ", key, " is out of range for dense table ", id));
    } else {
      init->second.Fill(key, dst, dim);
    }
    dst += dim;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<absl::Span<const float>>> CheckpointRows::Rows(
    const std::vector<ModelTable>& tables, const std::vector<uint64_t>& unique,
    absl::Span<const uint32_t> inverse, absl::Span<const uint32_t> fields) {
  rows_.resize(tables.size());
  std::vector<absl::Span<const float>> spans;
  spans.reserve(tables.size());
  for (size_t i = 0; i < tables.size(); ++i) {
    const ModelTable& mt = tables[i];
    if (mt.dense_keys > 0) {
      keys_.resize(mt.dense_keys);
      std::iota(keys_.begin(), keys_.end(), uint64_t{0});
    } else {
      keys_ = SparseTableKeys(mt, unique, inverse, fields);
      if (mt.with_bias) keys_.push_back(kBiasKey);
    }
    PETREL_RETURN_IF_ERROR(Fill(mt.id, keys_, &rows_[i]));
    spans.emplace_back(rows_[i].data(), rows_[i].size());
  }
  return spans;
}

}  // namespace petrel
