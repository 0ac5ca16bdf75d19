// Table files: one server's rows of one table in a checkpoint, binary and
// little-endian (docs/checkpoints.md gives the byte layout):
//
//   header   64 bytes: magic "PTRLTBL1", format version, table id, dim,
//            stride, optimizer kind, header size, zero padding
//   rows     per row: key (uint64), then stride floats (dim weights, then
//            the optimizer's state)
//   footer   16 bytes: row count (uint64), end magic "PTRLEND1" (the count
//            is known only at the end, and the file is written in one pass)
//
// The file's XXH64 (base/checksum.h) and size are recorded in the manifest
// (pb::CheckpointFile), which is how a reader detects a corrupted or
// truncated file.
//
//   PETREL_ASSIGN_OR_RETURN(auto w, TableFileWriter::Create(path, info));
//   for (...) PETREL_RETURN_IF_ERROR(w->Append(key, row));
//   PETREL_ASSIGN_OR_RETURN(pb::CheckpointFile file, w->Finish());
//
// Thread safety: a writer is used by one thread; ReadTableFile is
// thread-compatible (it reads ahead on a thread of its own and calls its
// callback on the calling thread).
#ifndef PETREL_CHECKPOINT_TABLE_FILE_H_
#define PETREL_CHECKPOINT_TABLE_FILE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

#include "proto/checkpoint.pb.h"

namespace petrel {

// What a table file holds besides its rows.
struct TableFileInfo {
  int table_id = 0;
  int dim = 1;
  int stride = 1;  // floats per row; >= dim
  pb::OptimizerProto::Kind optimizer = pb::OptimizerProto::KIND_FTRL;
};

class TableFileWriter {
 public:
  // Opens `path`.tmp for writing, with direct I/O where the filesystem
  // allows it (DurableFile): the rows go from the writer's 4 MiB buffer to
  // the device, not through the page cache of a server whose memory holds
  // its tables. Unavailable naming the path and the
  // reason (errno text) when it cannot be created.
  static absl::StatusOr<std::unique_ptr<TableFileWriter>> Create(
      const std::string& path, const TableFileInfo& info);
  virtual ~TableFileWriter() = default;

  // Appends one row of info.stride floats. Unavailable naming the path when
  // a write fails (e.g. a full disk).
  virtual absl::Status Append(uint64_t key, const float* row) = 0;
  // Appends n rows: keys[i] with rows[i * info.stride ..] (the rows back to
  // back). Errors as Append.
  virtual absl::Status AppendRows(const uint64_t* keys, const float* rows,
                                  size_t n) = 0;
  // Writes the row count, fsyncs, renames `path`.tmp to `path`. Returns the
  // file's entry for the manifest (name = the path's last component). On
  // any error the temporary file is removed and `path` is untouched.
  virtual absl::StatusOr<pb::CheckpointFile> Finish() = 0;
};

// Reads the table file `path`, checking it against `expected` (its size and
// checksum from the manifest) before any row is handed out, then calls
// `rows` with consecutive chunks: keys[i] has the stride floats
// values[i * stride ..]. DataLoss naming the path when the size, checksum,
// magic or layout do not match; NotFound when the file is missing; the
// first error `rows` returns stops the read and is returned. While `rows`
// handles a chunk (about 4 MiB of the file), the next one is read.
absl::Status ReadTableFile(
    const std::string& path, const pb::CheckpointFile& expected,
    const std::function<absl::Status(const TableFileInfo& info,
                                     absl::Span<const uint64_t> keys,
                                     absl::Span<const float> values)>& rows);

}  // namespace petrel

#endif  // PETREL_CHECKPOINT_TABLE_FILE_H_
