#include "checkpoint/start_checkpoint.h"

#include <utility>

#include "absl/strings/str_cat.h"

#include "base/status_macros.h"
#include "checkpoint/checkpoint_dir.h"

namespace petrel {

absl::StatusOr<StartCheckpoint> FindStartCheckpoint(
    const pb::CheckpointConfig& config, int num_workers) {
  StartCheckpoint start;
  start.restore = !config.restore_from().empty();
  const std::string& spec =
      start.restore ? config.restore_from() : config.warm_start_from();
  if (spec.empty()) return start;
  PETREL_ASSIGN_OR_RETURN(start.dir, ResolveCheckpoint(spec, config.dir()));
  PETREL_ASSIGN_OR_RETURN(start.manifest, ReadManifest(start.dir));
  if (start.restore && start.manifest.workers_size() != num_workers) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot restore ", start.dir, ": it was taken with ",
        start.manifest.workers_size(), " workers and this job has ",
        num_workers, " (worker positions cannot be remapped)"));
  }
  start.with_state = start.restore || !config.warm_start_reset_optimizer();
  return start;
}

}  // namespace petrel
