// Checkpoint directories: naming, the manifest, completion and retention.
//
// A checkpoint root (CheckpointConfig.dir) holds one directory per
// checkpoint, ROOT/ckpt-NNNNNNNN (id, zero-padded to 8 digits). Files are
// written under temporary names, fsynced and renamed; the MANIFEST is
// written last (then the directory is fsynced), so a directory without a
// valid MANIFEST is incomplete: it is never listed as complete nor restored
// from, and the next checkpoint of the same root removes it.
//
// Thread safety: functions are thread-compatible; one writer per root.
#ifndef PETREL_CHECKPOINT_CHECKPOINT_DIR_H_
#define PETREL_CHECKPOINT_CHECKPOINT_DIR_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

#include "proto/checkpoint.pb.h"

namespace petrel {

inline constexpr int kCheckpointFormatVersion = 1;
inline constexpr char kManifestName[] = "MANIFEST";
// The reason of the checkpoints early stopping asks for at each new best
// validation result (worker/train/validator.h); retention keeps the newest one.
inline constexpr char kBestCheckpointReason[] = "best";

// ROOT/ckpt-NNNNNNNN.
std::string CheckpointPath(const std::string& root, uint64_t id);
// The file name of `server_rank`'s share of table `table_id`.
std::string TableFileName(int table_id, int server_rank);

// Checks that `root` exists (creating it, and missing parents, when it does
// not) and that a file can be created, written, fsynced and removed in it.
// FailedPrecondition naming the path and the reason otherwise. Used before
// training starts for every output location.
absl::Status CheckWritableDir(const std::string& root);
// The same for a file path that will be written later (its directory).
absl::Status CheckWritableFile(const std::string& path);

// Creates ROOT/ckpt-NNNNNNNN for checkpoint `id` (removing an incomplete
// one of the same id). Returns its path.
absl::StatusOr<std::string> CreateCheckpointDir(const std::string& root,
                                                uint64_t id);
// Writes `manifest` as DIR/MANIFEST (temporary name, fsync, rename, fsync
// of DIR). After this returns OK the checkpoint is complete.
absl::Status WriteManifest(const std::string& dir,
                           const pb::CheckpointManifest& manifest);
// Reads DIR/MANIFEST and checks its format version, that it lists one
// file per table per server (ranks 0..num_servers-1), and that every listed
// file exists with its recorded size (checksums are checked when a file is
// read). NotFound when there is no MANIFEST (an incomplete checkpoint);
// DataLoss naming the file otherwise.
absl::StatusOr<pb::CheckpointManifest> ReadManifest(const std::string& dir);

// Ids of the complete checkpoints under `root`, ascending.
absl::StatusOr<std::vector<uint64_t>> ListCheckpoints(const std::string& root);
// `spec` is a checkpoint directory, or "latest": the newest complete
// checkpoint under `root`. NotFound naming what was looked for otherwise.
absl::StatusOr<std::string> ResolveCheckpoint(const std::string& spec,
                                              const std::string& root);
// Removes all but the newest `keep` complete checkpoints, and every
// incomplete one older than the newest complete one. The newest complete
// checkpoint taken for kBestCheckpointReason (early stopping's best model)
// is kept as well.
absl::Status RetainCheckpoints(const std::string& root, int keep);

// Checks that `manifest`'s tables fit `tables` (a job's, as its servers
// describe them): the same ids, dims and dense sizes; with `with_state`,
// also the same optimizer kinds and strides. InvalidArgument naming the
// first mismatch, e.g. "table 1: checkpoint dim 16, job dim 8".
absl::Status CheckCompatible(const pb::CheckpointManifest& manifest,
                             absl::Span<const pb::CheckpointTable> tables,
                             bool with_state);

}  // namespace petrel

#endif  // PETREL_CHECKPOINT_CHECKPOINT_DIR_H_
