#include "tools/export/table_export.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

#include "base/little_endian.h"
#include "base/staged_output.h"
#include "base/status_macros.h"
#include "checkpoint/checkpoint_dir.h"
#include "checkpoint/table_file.h"

namespace petrel {
namespace {

constexpr size_t kFlushBytes = 1 << 20;

void PutLittleEndian(uint64_t x, int bytes, std::string* out) {
  for (int i = 0; i < bytes; ++i)
    out->push_back(static_cast<char>(x >> (8 * i)));
}

void PutFloat(float f, std::string* out) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  PutLittleEndian(bits, 4, out);
}

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

// Buffers the output and writes it to `path` (the staging path of
// `output`) in large chunks.
class OutputFile {
 public:
  OutputFile(std::string path, std::string output)
      : path_(std::move(path)), output_(std::move(output)) {}
  ~OutputFile() {
    if (file_ != nullptr) {
      std::fclose(file_);
      DiscardStaged(path_, output_);
    }
  }

  absl::Status Open() {
    file_ = std::fopen(path_.c_str(), "wb");
    if (file_ == nullptr) return Error("cannot create");
    return absl::OkStatus();
  }
  std::string* buffer() { return &buffer_; }
  absl::Status MaybeFlush() {
    return buffer_.size() >= kFlushBytes ? Flush() : absl::OkStatus();
  }
  // Flushes and closes; the file stays.
  absl::Status Close() {
    PETREL_RETURN_IF_ERROR(Flush());
    std::FILE* f = std::exchange(file_, nullptr);
    if (std::fclose(f) != 0) {
      DiscardStaged(path_, output_);
      return Error("cannot write");
    }
    return absl::OkStatus();
  }
  uint64_t bytes() const { return bytes_ + buffer_.size(); }

 private:
  absl::Status Flush() {
    if (!buffer_.empty() && std::fwrite(buffer_.data(), 1, buffer_.size(),
                                        file_) != buffer_.size()) {
      return Error("cannot write");
    }
    bytes_ += buffer_.size();
    buffer_.clear();
    return absl::OkStatus();
  }
  absl::Status Error(const char* what) const {
    return absl::UnavailableError(
        absl::StrCat(what, " ", path_, ": ", std::strerror(errno)));
  }

  const std::string path_;
  const std::string output_;
  std::FILE* file_ = nullptr;
  std::string buffer_;
  uint64_t bytes_ = 0;
};

// The manifest's entry of table `id`, or NotFound.
absl::StatusOr<pb::CheckpointTable> FindTable(
    const pb::CheckpointManifest& manifest, int id) {
  for (const pb::CheckpointTable& t : manifest.tables()) {
    if (t.id() == id) return t;
  }
  return absl::NotFoundError(absl::StrCat("the checkpoint has no table ", id));
}

// The files of table `id`, by server rank.
std::vector<pb::CheckpointFile> FilesOf(const pb::CheckpointManifest& manifest,
                                        int id) {
  std::vector<pb::CheckpointFile> files;
  for (const pb::CheckpointFile& f : manifest.files()) {
    if (f.table_id() == id) files.push_back(f);
  }
  std::sort(files.begin(), files.end(),
            [](const pb::CheckpointFile& a, const pb::CheckpointFile& b) {
              return a.server_rank() < b.server_rank();
            });
  return files;
}

void AppendSectionHeader(const pb::CheckpointTable& t, int floats,
                         uint64_t rows, std::string* out) {
  PutLittleEndian(static_cast<uint32_t>(t.id()), 4, out);
  PutLittleEndian(static_cast<uint32_t>(t.dim()), 4, out);
  PutLittleEndian(static_cast<uint32_t>(floats), 4, out);
  PutLittleEndian(static_cast<uint32_t>(t.optimizer()), 4, out);
  PutLittleEndian(rows, 8, out);
  PutLittleEndian(t.dense() ? 1 : 0, 8, out);
}

// Appends one table's rows (and in binary its section header) to `out`.
absl::StatusOr<uint64_t> ExportTable(const std::string& dir,
                                     const pb::CheckpointManifest& manifest,
                                     const pb::CheckpointTable& table,
                                     const ExportOptions& options,
                                     OutputFile* out) {
  const std::vector<pb::CheckpointFile> files = FilesOf(manifest, table.id());
  uint64_t expected = 0;
  for (const pb::CheckpointFile& f : files) expected += f.rows();
  const int floats = options.with_state ? table.stride() : table.dim();
  const bool binary = options.format == ExportFormat::kBinary;
  if (binary) AppendSectionHeader(table, floats, expected, out->buffer());
  uint64_t rows = 0;
  for (const pb::CheckpointFile& f : files) {
    const std::string path = absl::StrCat(dir, "/", f.name());
    PETREL_RETURN_IF_ERROR(ReadTableFile(
        path, f,
        [&](const TableFileInfo& info, absl::Span<const uint64_t> keys,
            absl::Span<const float> values) -> absl::Status {
          if (info.dim != table.dim() || info.stride != table.stride()) {
            return absl::DataLossError(
                absl::StrCat(path, ": dim ", info.dim, " stride ", info.stride,
                             ", but the manifest says dim ", table.dim(),
                             " stride ", table.stride()));
          }
          std::string* buf = out->buffer();
          for (size_t i = 0; i < keys.size(); ++i) {
            const float* row = values.data() + i * info.stride;
            if (binary) {
              PutLittleEndian(keys[i], 8, buf);
              for (int j = 0; j < floats; ++j) PutFloat(row[j], buf);
            } else {
              absl::StrAppend(buf, table.id(), " ", keys[i]);
              for (int j = 0; j < floats; ++j) {
                absl::StrAppendFormat(buf, " %.9g", row[j]);
              }
              buf->push_back('\n');
            }
            PETREL_RETURN_IF_ERROR(out->MaybeFlush());
          }
          rows += keys.size();
          return absl::OkStatus();
        }));
  }
  if (rows != expected) {
    return absl::DataLossError(
        absl::StrCat("table ", table.id(), " of ", dir, ": the files hold ",
                     rows, " rows, the manifest lists ", expected));
  }
  return rows;
}

}  // namespace

absl::StatusOr<ExportFormat> ParseExportFormat(absl::string_view text) {
  if (text == "text") return ExportFormat::kText;
  if (text == "binary") return ExportFormat::kBinary;
  return absl::InvalidArgumentError(
      absl::StrCat("format \"", text, "\" is not text or binary"));
}

absl::StatusOr<std::vector<int>> ParseTableIds(absl::string_view text) {
  std::vector<int> ids;
  if (text.empty()) return ids;
  for (absl::string_view item : absl::StrSplit(text, ',')) {
    int id;
    if (!absl::SimpleAtoi(item, &id) || id < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("\"", item, "\" is not a table id"));
    }
    ids.push_back(id);
  }
  return ids;
}

absl::StatusOr<ExportStats> ExportCheckpoint(
    const std::string& dir, const pb::CheckpointManifest& manifest,
    const ExportOptions& options, const std::string& output) {
  std::vector<int> ids = options.tables;
  if (ids.empty()) {
    for (const pb::CheckpointTable& t : manifest.tables())
      ids.push_back(t.id());
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  std::vector<pb::CheckpointTable> tables;
  for (int id : ids) {
    PETREL_ASSIGN_OR_RETURN(pb::CheckpointTable t, FindTable(manifest, id));
    tables.push_back(std::move(t));
  }
  const std::string tmp = StagingPath(output);
  OutputFile out(tmp, output);
  PETREL_RETURN_IF_ERROR(out.Open());
  if (options.format == ExportFormat::kBinary) {
    out.buffer()->append(kExportMagic, 8);
    PutLittleEndian(kExportVersion, 4, out.buffer());
    PutLittleEndian(tables.size(), 4, out.buffer());
  }
  ExportStats stats;
  for (const pb::CheckpointTable& t : tables) {
    PETREL_ASSIGN_OR_RETURN(uint64_t rows,
                            ExportTable(dir, manifest, t, options, &out));
    stats.rows += rows;
    ++stats.tables;
  }
  stats.bytes = out.bytes();
  PETREL_RETURN_IF_ERROR(out.Close());
  if (absl::Status s = CommitStaged(tmp, output); !s.ok()) {
    DiscardStaged(tmp, output);
    return s;
  }
  return stats;
}

namespace {

// Reads exactly `n` bytes, or DataLoss naming the path.
absl::Status ReadExact(std::FILE* f, const std::string& path, void* out,
                       size_t n, const char* what) {
  if (std::fread(out, 1, n, f) != n) {
    return absl::DataLossError(
        absl::StrCat(path, ": truncated (reading ", what, ")"));
  }
  return absl::OkStatus();
}

uint32_t U32(const unsigned char* p) { return LoadLittleEndian32(p); }
uint64_t U64(const unsigned char* p) { return LoadLittleEndian64(p); }

absl::Status ReadSection(
    std::FILE* f, const std::string& path,
    const std::function<absl::Status(const ExportedTable&, uint64_t,
                                     absl::Span<const float>)>& row) {
  unsigned char h[kExportSectionHeaderBytes];
  PETREL_RETURN_IF_ERROR(ReadExact(f, path, h, sizeof(h), "a table header"));
  ExportedTable t;
  t.id = static_cast<int>(U32(h));
  t.dim = static_cast<int>(U32(h + 4));
  t.floats_per_row = static_cast<int>(U32(h + 8));
  t.optimizer = static_cast<pb::OptimizerProto::Kind>(U32(h + 12));
  t.rows = U64(h + 16);
  t.dense = (U64(h + 24) & 1) != 0;
  if (t.dim < 1 || t.floats_per_row < t.dim || t.floats_per_row > (1 << 24)) {
    return absl::DataLossError(absl::StrCat(path, ": table ", t.id, " has dim ",
                                            t.dim, " and ", t.floats_per_row,
                                            " floats per row"));
  }
  std::vector<unsigned char> buf(8 + 4 * static_cast<size_t>(t.floats_per_row));
  std::vector<float> values(t.floats_per_row);
  for (uint64_t r = 0; r < t.rows; ++r) {
    PETREL_RETURN_IF_ERROR(ReadExact(f, path, buf.data(), buf.size(), "a row"));
    for (int j = 0; j < t.floats_per_row; ++j) {
      const uint32_t bits = U32(buf.data() + 8 + 4 * j);
      std::memcpy(&values[j], &bits, 4);
    }
    PETREL_RETURN_IF_ERROR(row(t, U64(buf.data()), values));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ReadBinaryExport(
    const std::string& path,
    const std::function<absl::Status(const ExportedTable& table, uint64_t key,
                                     absl::Span<const float> values)>& row) {
  File f(std::fopen(path.c_str(), "rb"));
  if (f == nullptr) {
    const int err = errno;
    const absl::string_view why = std::strerror(err);
    return err == ENOENT ? absl::NotFoundError(absl::StrCat(path, ": ", why))
                         : absl::DataLossError(absl::StrCat(path, ": ", why));
  }
  unsigned char h[kExportFileHeaderBytes];
  PETREL_RETURN_IF_ERROR(ReadExact(f.get(), path, h, sizeof(h), "the header"));
  if (std::memcmp(h, kExportMagic, 8) != 0) {
    return absl::DataLossError(
        absl::StrCat(path, ": not a Petrel binary export (bad magic)"));
  }
  if (U32(h + 8) != kExportVersion) {
    return absl::DataLossError(absl::StrCat(
        path, ": format version ", U32(h + 8), ", expected ", kExportVersion));
  }
  const uint32_t tables = U32(h + 12);
  for (uint32_t i = 0; i < tables; ++i) {
    PETREL_RETURN_IF_ERROR(ReadSection(f.get(), path, row));
  }
  if (std::fgetc(f.get()) != EOF) {
    return absl::DataLossError(
        absl::StrCat(path, ": bytes after the last table"));
  }
  return absl::OkStatus();
}

}  // namespace petrel
