#include "checkpoint/table_file.h"

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

#include "base/checksum.h"
#include "base/little_endian.h"
#include "base/status_macros.h"
#include "checkpoint/durable_file.h"

namespace petrel {
namespace {

// The byte layout (docs/checkpoints.md, "Format"); all little-endian.
constexpr char kMagic[8] = {'P', 'T', 'R', 'L', 'T', 'B', 'L', '1'};
constexpr char kEndMagic[8] = {'P', 'T', 'R', 'L', 'E', 'N', 'D', '1'};
constexpr uint32_t kVersion = 1;
constexpr size_t kHeaderBytes = 64;
constexpr size_t kFooterBytes = 16;
// Header field offsets.
constexpr size_t kVersionAt = 8;
constexpr size_t kTableIdAt = 12;
constexpr size_t kDimAt = 16;
constexpr size_t kStrideAt = 20;
constexpr size_t kOptimizerAt = 24;
constexpr size_t kHeaderBytesAt = 28;
// Floats per row a file may declare: a table's dim is at most 65536 and an
// optimizer keeps at most twice as much state again (Adam) plus a count.
constexpr int kMaxStride = 4 * 65536;
// Bytes buffered by a writer and read at once by a reader.
constexpr size_t kBufferBytes = size_t{4} << 20;

size_t RowBytes(int stride) { return 8 + 4 * static_cast<size_t>(stride); }

void Put32(unsigned char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}
void Put64(unsigned char* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}
int32_t Get32(const unsigned char* p) {
  return static_cast<int32_t>(LoadLittleEndian32(p));
}

bool LittleEndianHost() {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  return false;
#else
  return true;
#endif
}

class TableFileWriterImpl : public TableFileWriter {
 public:
  TableFileWriterImpl(std::unique_ptr<DurableFile> file,
                      const TableFileInfo& info)
      : file_(std::move(file)), info_(info), row_bytes_(RowBytes(info.stride)) {
    buffer_.reserve(std::max(kBufferBytes, row_bytes_ + kHeaderBytes));
    unsigned char header[kHeaderBytes] = {};
    std::memcpy(header, kMagic, sizeof(kMagic));
    Put32(header + kVersionAt, kVersion);
    Put32(header + kTableIdAt, static_cast<uint32_t>(info.table_id));
    Put32(header + kDimAt, static_cast<uint32_t>(info.dim));
    Put32(header + kStrideAt, static_cast<uint32_t>(info.stride));
    Put32(header + kOptimizerAt, static_cast<uint32_t>(info.optimizer));
    Put32(header + kHeaderBytesAt, kHeaderBytes);
    buffer_.insert(buffer_.end(), header, header + kHeaderBytes);
  }

  absl::Status Append(uint64_t key, const float* row) override {
    PETREL_RETURN_IF_ERROR(status_);
    if (buffer_.size() + row_bytes_ > buffer_.capacity()) {
      PETREL_RETURN_IF_ERROR(Flush());
    }
    const size_t at = buffer_.size();
    buffer_.resize(at + row_bytes_);
    unsigned char* p = buffer_.data() + at;
    Put64(p, key);
    if (LittleEndianHost()) {
      std::memcpy(p + 8, row, row_bytes_ - 8);
    } else {
      for (int i = 0; i < info_.stride; ++i) {
        uint32_t bits;
        std::memcpy(&bits, row + i, 4);
        Put32(p + 8 + 4 * i, bits);
      }
    }
    ++rows_;
    return absl::OkStatus();
  }

  absl::StatusOr<pb::CheckpointFile> Finish() override {
    PETREL_RETURN_IF_ERROR(status_);
    unsigned char footer[kFooterBytes];
    Put64(footer, rows_);
    std::memcpy(footer + 8, kEndMagic, sizeof(kEndMagic));
    if (buffer_.size() + kFooterBytes > buffer_.capacity()) {
      PETREL_RETURN_IF_ERROR(Flush());
    }
    buffer_.insert(buffer_.end(), footer, footer + kFooterBytes);
    PETREL_RETURN_IF_ERROR(Flush());
    status_ = file_->Commit();
    PETREL_RETURN_IF_ERROR(status_);
    status_ = absl::FailedPreconditionError(
        absl::StrCat("table file ", file_->path(), " already finished"));
    pb::CheckpointFile entry;
    entry.set_name(BaseName(file_->path()));
    entry.set_table_id(info_.table_id);
    entry.set_rows(rows_);
    entry.set_bytes(file_->bytes_written());
    entry.set_xxh64(checksum_.Digest());
    return entry;
  }

 private:
  absl::Status Flush() {
    checksum_.Update(buffer_.data(), buffer_.size());
    status_ = file_->Write(buffer_.data(), buffer_.size());
    buffer_.clear();
    return status_;
  }

  std::unique_ptr<DurableFile> file_;
  const TableFileInfo info_;
  const size_t row_bytes_;
  std::vector<unsigned char> buffer_;
  Checksum64Stream checksum_;
  uint64_t rows_ = 0;
  absl::Status status_;  // the first error; every later call returns it
};

// A file open for reading, closed on destruction.
class ReadFd {
 public:
  explicit ReadFd(int fd) : fd_(fd) {}
  ~ReadFd() {
    if (fd_ >= 0) ::close(fd_);
  }
  ReadFd(const ReadFd&) = delete;
  ReadFd& operator=(const ReadFd&) = delete;
  int get() const { return fd_; }

 private:
  const int fd_;
};

// Reads exactly `size` bytes at `offset`.
absl::Status ReadAt(int fd, const std::string& path, uint64_t offset, void* out,
                    size_t size) {
  auto* p = static_cast<char*>(out);
  while (size > 0) {
    const ssize_t n = ::pread(fd, p, size, static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(absl::StatusCode::kUnavailable, "read", path, errno);
    }
    if (n == 0) {
      return absl::DataLossError(
          absl::StrCat("read ", path, ": file ends at byte ", offset));
    }
    p += n;
    size -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return absl::OkStatus();
}

// Streams the whole file through the checksum.
absl::Status VerifyChecksum(int fd, const std::string& path, uint64_t size,
                            uint64_t expected, std::vector<char>& buffer) {
  Checksum64Stream checksum;
  for (uint64_t at = 0; at < size;) {
    const size_t n =
        static_cast<size_t>(std::min<uint64_t>(buffer.size(), size - at));
    PETREL_RETURN_IF_ERROR(ReadAt(fd, path, at, buffer.data(), n));
    checksum.Update(buffer.data(), n);
    at += n;
  }
  const uint64_t actual = checksum.Digest();
  if (actual != expected) {
    return absl::DataLossError(absl::StrFormat(
        "%s: checksum %016x does not match the manifest's %016x (the file is "
        "corrupted)",
        path, actual, expected));
  }
  return absl::OkStatus();
}

// Parses and checks the header and footer against the file's size and the
// manifest's entry.
absl::StatusOr<TableFileInfo> ParseLayout(const std::string& path,
                                          const unsigned char* header,
                                          const unsigned char* footer,
                                          uint64_t size,
                                          const pb::CheckpointFile& expected) {
  auto bad = [&](const std::string& what) {
    return absl::DataLossError(absl::StrCat(path, ": ", what));
  };
  if (std::memcmp(header, kMagic, sizeof(kMagic)) != 0) {
    return bad("not a Petrel table file (bad magic)");
  }
  const uint32_t version = LoadLittleEndian32(header + kVersionAt);
  if (version != kVersion) {
    return bad(absl::StrCat("table file format version ", version,
                            ", this build reads ", kVersion));
  }
  if (LoadLittleEndian32(header + kHeaderBytesAt) != kHeaderBytes) {
    return bad("unexpected header size");
  }
  TableFileInfo info;
  info.table_id = Get32(header + kTableIdAt);
  info.dim = Get32(header + kDimAt);
  info.stride = Get32(header + kStrideAt);
  const int32_t kind = Get32(header + kOptimizerAt);
  if (info.dim < 1 || info.stride < info.dim || info.stride > kMaxStride) {
    return bad(absl::StrCat("bad dim ", info.dim, " / stride ", info.stride));
  }
  if (!pb::OptimizerProto::Kind_IsValid(kind)) {
    return bad(absl::StrCat("unknown optimizer kind ", kind));
  }
  info.optimizer = static_cast<pb::OptimizerProto::Kind>(kind);
  if (info.table_id != expected.table_id()) {
    return bad(absl::StrCat("holds table ", info.table_id,
                            ", the manifest says table ", expected.table_id()));
  }
  if (std::memcmp(footer + 8, kEndMagic, sizeof(kEndMagic)) != 0) {
    return bad("bad end marker (truncated or corrupted)");
  }
  const uint64_t rows = LoadLittleEndian64(footer);
  const uint64_t row_bytes = RowBytes(info.stride);
  if ((size - kHeaderBytes - kFooterBytes) / row_bytes != rows ||
      (size - kHeaderBytes - kFooterBytes) % row_bytes != 0) {
    return bad(absl::StrCat(size, " bytes do not hold the ", rows,
                            " rows of stride ", info.stride,
                            " its footer counts"));
  }
  if (rows != expected.rows()) {
    return bad(
        absl::StrCat(rows, " rows, the manifest says ", expected.rows()));
  }
  return info;
}

// Hands out the rows in chunks of whole rows.
absl::Status ReadRows(int fd, const std::string& path,
                      const TableFileInfo& info, uint64_t rows,
                      std::vector<char>& buffer,
                      const std::function<absl::Status(
                          const TableFileInfo&, absl::Span<const uint64_t>,
                          absl::Span<const float>)>& fn) {
  const size_t row_bytes = RowBytes(info.stride);
  const size_t chunk_rows = std::max<size_t>(1, buffer.size() / row_bytes);
  if (buffer.size() < chunk_rows * row_bytes) {
    buffer.resize(chunk_rows * row_bytes);
  }
  std::vector<uint64_t> keys(std::min<uint64_t>(chunk_rows, rows));
  std::vector<float> values(keys.size() * info.stride);
  uint64_t offset = kHeaderBytes;
  for (uint64_t done = 0; done < rows;) {
    const size_t n =
        static_cast<size_t>(std::min<uint64_t>(chunk_rows, rows - done));
    PETREL_RETURN_IF_ERROR(
        ReadAt(fd, path, offset, buffer.data(), n * row_bytes));
    const auto* p = reinterpret_cast<const unsigned char*>(buffer.data());
    for (size_t i = 0; i < n; ++i, p += row_bytes) {
      keys[i] = LoadLittleEndian64(p);
      float* out = values.data() + i * info.stride;
      if (LittleEndianHost()) {
        std::memcpy(out, p + 8, row_bytes - 8);
      } else {
        for (int j = 0; j < info.stride; ++j) {
          const uint32_t bits = LoadLittleEndian32(p + 8 + 4 * j);
          std::memcpy(out + j, &bits, 4);
        }
      }
    }
    PETREL_RETURN_IF_ERROR(
        fn(info, absl::MakeConstSpan(keys.data(), n),
           absl::MakeConstSpan(values.data(), n * info.stride)));
    done += n;
    offset += n * row_bytes;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<TableFileWriter>> TableFileWriter::Create(
    const std::string& path, const TableFileInfo& info) {
  if (info.dim < 1 || info.stride < info.dim || info.stride > kMaxStride) {
    return absl::InvalidArgumentError(absl::StrCat("table file ", path,
                                                   ": bad dim ", info.dim,
                                                   " / stride ", info.stride));
  }
  PETREL_ASSIGN_OR_RETURN(std::unique_ptr<DurableFile> file,
                          DurableFile::Create(path));
  return std::unique_ptr<TableFileWriter>(
      new TableFileWriterImpl(std::move(file), info));
}

absl::Status ReadTableFile(
    const std::string& path, const pb::CheckpointFile& expected,
    const std::function<absl::Status(const TableFileInfo& info,
                                     absl::Span<const uint64_t> keys,
                                     absl::Span<const float> values)>& rows) {
  const int raw_fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (raw_fd < 0) {
    const int err = errno;
    return ErrnoStatus(err == ENOENT ? absl::StatusCode::kNotFound
                                     : absl::StatusCode::kUnavailable,
                       "open", path, err);
  }
  ReadFd fd(raw_fd);
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) {
    return ErrnoStatus(absl::StatusCode::kUnavailable, "stat", path, errno);
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size != expected.bytes()) {
    return absl::DataLossError(
        absl::StrCat(path, ": ", size, " bytes, the manifest says ",
                     expected.bytes(), " (truncated or replaced)"));
  }
  if (size < kHeaderBytes + kFooterBytes) {
    return absl::DataLossError(
        absl::StrCat(path, ": ", size, " bytes, too short for a table file"));
  }
  ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
  std::vector<char> buffer(kBufferBytes);
  PETREL_RETURN_IF_ERROR(
      VerifyChecksum(fd.get(), path, size, expected.xxh64(), buffer));
  unsigned char header[kHeaderBytes];
  unsigned char footer[kFooterBytes];
  PETREL_RETURN_IF_ERROR(ReadAt(fd.get(), path, 0, header, kHeaderBytes));
  PETREL_RETURN_IF_ERROR(
      ReadAt(fd.get(), path, size - kFooterBytes, footer, kFooterBytes));
  PETREL_ASSIGN_OR_RETURN(TableFileInfo info,
                          ParseLayout(path, header, footer, size, expected));
  return ReadRows(fd.get(), path, info, expected.rows(), buffer, rows);
}

}  // namespace petrel
