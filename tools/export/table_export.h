// Exporting a checkpoint's tables for other tools (petrel-export), in one of
// the two layouts docs/export-format.md describes byte by byte:
//
//   text    one row per line: "TABLE_ID KEY W0 W1 ...", decimal, the floats
//           as "%.9g" (they read back exactly), the layout of
//           train.model_output
//   binary  little-endian: a 16-byte file header (magic "PTRLEXP1", version,
//           table count), then per table a 32-byte section header (id, dim,
//           floats per row, optimizer kind, row count, dense flag) and its
//           rows (uint64 key, then the floats)
//
// Rows are read from the checkpoint's table files (checkpoint/table_file.h,
// checksums checked) and streamed out: memory use does not grow with the
// table. Tables come in ascending id; within a table, by server rank, then in
// file order. Each row's floats are its dim weights, followed with
// `with_state` by the optimizer's state (docs/export-format.md lists it per
// optimizer).
//
// Thread safety: functions are thread-compatible.
#ifndef PETREL_TOOLS_EXPORT_TABLE_EXPORT_H_
#define PETREL_TOOLS_EXPORT_TABLE_EXPORT_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

#include "proto/checkpoint.pb.h"

namespace petrel {

inline constexpr char kExportMagic[] = "PTRLEXP1";  // 8 bytes, no NUL
inline constexpr uint32_t kExportVersion = 1;
inline constexpr size_t kExportFileHeaderBytes = 16;
inline constexpr size_t kExportSectionHeaderBytes = 32;

enum class ExportFormat { kText, kBinary };

// "text" or "binary"; InvalidArgument naming the text otherwise.
absl::StatusOr<ExportFormat> ParseExportFormat(absl::string_view text);

// Parses "ID,ID,..." (empty: every table); InvalidArgument naming the
// item that is not a table id.
absl::StatusOr<std::vector<int>> ParseTableIds(absl::string_view text);

struct ExportOptions {
  ExportFormat format = ExportFormat::kText;  // default text
  std::vector<int> tables;  // default empty: every table of the checkpoint
  bool with_state = false;  // default false: weights only
};

struct ExportStats {
  int tables = 0;
  uint64_t rows = 0;
  uint64_t bytes = 0;  // of the output file
};

// Writes the tables of the checkpoint in `dir` (whose manifest is
// `manifest`) to `output`, through `output`.tmp renamed when complete (a
// failure leaves no partial file under `output`). Errors: NotFound naming a
// table id the checkpoint does not have; DataLoss naming a corrupted table
// file; Unavailable naming the output when it cannot be written.
absl::StatusOr<ExportStats> ExportCheckpoint(
    const std::string& dir, const pb::CheckpointManifest& manifest,
    const ExportOptions& options, const std::string& output);

// A table section of a binary export.
struct ExportedTable {
  int id = 0;
  int dim = 1;
  int floats_per_row = 1;  // dim, or dim + state floats (with_state)
  pb::OptimizerProto::Kind optimizer = pb::OptimizerProto::KIND_FTRL;
  uint64_t rows = 0;
  bool dense = false;
};

// Reads a binary export (the reference reader of docs/export-format.md):
// calls `row` for every row of every table, in file order, with its table's
// section header and floats_per_row floats. DataLoss naming the path for a
// bad magic, version or a size that does not match the headers; NotFound
// when the file does not exist; the first error `row` returns.
absl::Status ReadBinaryExport(
    const std::string& path,
    const std::function<absl::Status(const ExportedTable& table, uint64_t key,
                                     absl::Span<const float> values)>& row);

}  // namespace petrel

#endif  // PETREL_TOOLS_EXPORT_TABLE_EXPORT_H_
