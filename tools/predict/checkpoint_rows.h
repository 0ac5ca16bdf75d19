// CheckpointRows: a checkpoint's tables loaded into memory, outside any
// cluster, serving a model's rows to worker/model/scorer.h's ScoreReader as a
// training job's servers would: the stored row of a key, or for a key the
// checkpoint does not hold the row its table's initializer gives it
// (server/initializer.h; it depends only on the seed, table and key, so it is
// the row a server's pull would have created).
//
// Every server's table files are loaded into one in-process TableServer
// (built from the manifest's job config), as a restore onto one server
// would. Weights only: optimizer state is not needed to score.
//
// Thread safety: Rows is used by one thread at a time.
#ifndef PETREL_TOOLS_PREDICT_CHECKPOINT_ROWS_H_
#define PETREL_TOOLS_PREDICT_CHECKPOINT_ROWS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"

#include "proto/checkpoint.pb.h"
#include "server/initializer.h"
#include "server/table_server.h"
#include "worker/model/scorer.h"

namespace petrel {

class CheckpointRows : public RowSource {
 public:
  // Loads the checkpoint in `dir` whose manifest is `manifest`. Errors:
  // InvalidArgument when the manifest's job config or tables are not
  // usable (naming the field or the mismatch), DataLoss naming the file for
  // a corrupted or truncated table file, NotFound for a missing one.
  static absl::StatusOr<std::unique_ptr<CheckpointRows>> Load(
      const std::string& dir, const pb::CheckpointManifest& manifest);

  // See RowSource. NotFound when the checkpoint has no table a model names;
  // InvalidArgument for a dense key out of range.
  absl::StatusOr<std::vector<absl::Span<const float>>> Rows(
      const std::vector<ModelTable>& tables,
      const std::vector<uint64_t>& unique, absl::Span<const uint32_t> inverse,
      absl::Span<const uint32_t> fields) override;

  // The loaded table `id`, or null.
  const Table* table(int id) const { return server_->table(id); }

 private:
  CheckpointRows(std::unique_ptr<TableServer> server,
                 absl::flat_hash_map<int, Initializer> initializers)
      : server_(std::move(server)), initializers_(std::move(initializers)) {}
  // Copies (or initializes) the rows of `keys` from table `id` into `out`.
  absl::Status Fill(int id, absl::Span<const uint64_t> keys,
                    std::vector<float>* out) const;

  std::unique_ptr<TableServer> server_;
  absl::flat_hash_map<int, Initializer> initializers_;  // by table id
  std::vector<uint64_t> keys_;                          // scratch
  std::vector<std::vector<float>> rows_;  // per model table; spans view it
};

}  // namespace petrel

#endif  // PETREL_TOOLS_PREDICT_CHECKPOINT_ROWS_H_
