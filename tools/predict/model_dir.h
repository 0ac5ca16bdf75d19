// Where a trained model is: what petrel-predict and petrel-export accept as
// --model, turned into one complete checkpoint directory and its manifest.
//
// Thread safety: pure functions of the filesystem.
#ifndef PETREL_TOOLS_PREDICT_MODEL_DIR_H_
#define PETREL_TOOLS_PREDICT_MODEL_DIR_H_

#include <string>

#include "absl/status/statusor.h"

#include "proto/checkpoint.pb.h"

namespace petrel {

struct ModelDir {
  std::string dir;  // the checkpoint directory
  pb::CheckpointManifest manifest;
};

// `spec` is one of
//   - a checkpoint directory (it holds a MANIFEST),
//   - a checkpoint root (CheckpointConfig.dir): its newest complete
//     checkpoint,
//   - ROOT/latest: the same.
// Reads and checks the manifest (checkpoint/checkpoint_dir.h ReadManifest).
// Errors name the path: NotFound when it does not exist or holds no
// complete checkpoint (e.g. a directory without its MANIFEST, which is an
// incomplete checkpoint), DataLoss for a damaged manifest or a missing or
// resized file. InvalidArgument for an empty spec.
absl::StatusOr<ModelDir> OpenModelDir(const std::string& spec);

}  // namespace petrel

#endif  // PETREL_TOOLS_PREDICT_MODEL_DIR_H_
