// The checkpoint a job starts from, as every role of the job finds it:
// checkpoint.restore_from (rows with their optimizer state and the workers'
// positions), else checkpoint.warm_start_from (rows only; training starts
// at the beginning of the data).
//
// Thread safety: thread-compatible.
#ifndef PETREL_CHECKPOINT_START_CHECKPOINT_H_
#define PETREL_CHECKPOINT_START_CHECKPOINT_H_

#include <string>

#include "absl/status/statusor.h"

#include "proto/checkpoint.pb.h"
#include "proto/job.pb.h"

namespace petrel {

struct StartCheckpoint {
  std::string dir;  // empty: the job starts from nothing
  pb::CheckpointManifest manifest;
  bool restore = false;    // restore_from: resume where it was taken
  bool with_state = true;  // load the optimizer state with the rows
};

// Resolves and reads the checkpoint `config` names (ResolveCheckpoint,
// ReadManifest). A restore must come from a job of `num_workers` workers:
// InvalidArgument naming both counts otherwise (worker positions cannot be
// remapped). NotFound / DataLoss from the checkpoint directory as is.
absl::StatusOr<StartCheckpoint> FindStartCheckpoint(
    const pb::CheckpointConfig& config, int num_workers);

}  // namespace petrel

#endif  // PETREL_CHECKPOINT_START_CHECKPOINT_H_
