// Resuming a worker's share of the training data at a checkpoint's worker
// position (pb::WorkerPosition, docs/checkpoints.md "Worker positions").
//
// A position records the epoch, the examples of it already trained
// (examples_in_epoch, the authority) and, when known, byte_offset: where in
// the concatenated training files the next example's line starts, with the
// fingerprint of the input it refers to. A resumed reader seeks to that
// offset when the input is the same and the pass parses text; otherwise the
// caller skips examples_in_epoch examples. Both land on the same example.
//
// Thread-safe (pure functions of their arguments and the file system).
#ifndef PETREL_WORKER_DATA_RESUME_POSITION_H_
#define PETREL_WORKER_DATA_RESUME_POSITION_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

#include "proto/checkpoint.pb.h"
#include "worker/data/reader.h"

namespace petrel {

// The identity of `options`' share: a checksum of its parsed-example cache
// key (worker/data/cache_key.h: the data format and reader settings, the share,
// and every file's path, size, mtime, inode and sampled content). Never 0.
// NotFound or DataLoss when an input file cannot be inspected.
absl::StatusOr<uint64_t> InputFingerprint(const ReaderOptions& options);

// Seeks `reader` (at the start of a pass of the position's epoch) to
// `position`'s byte_offset when that is possible and returns true; returns
// false with the reason in *why_not when the caller must skip
// examples_in_epoch examples instead: no offset was recorded, the input's
// fingerprint differs from `fingerprint` (0: unknown), or the reader cannot
// seek (its pass is served from the parsed-example cache) or refuses the
// offset. After false the reader is where it was.
bool SeekToPosition(const pb::WorkerPosition& position, uint64_t fingerprint,
                    Reader* reader, std::string* why_not);

}  // namespace petrel

#endif  // PETREL_WORKER_DATA_RESUME_POSITION_H_
