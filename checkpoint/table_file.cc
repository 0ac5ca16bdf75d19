#include "checkpoint/table_file.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <thread>
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

size_t RoundUp(size_t n, size_t to) { return (n + to - 1) / to * to; }

// Buffers for direct I/O: aligned as DurableFile::kDirectAlignment says.
constexpr size_t kAlignment = DurableFile::kDirectAlignment;
struct FreeBytes {
  void operator()(unsigned char* p) const { std::free(p); }
};
using AlignedBytes = std::unique_ptr<unsigned char, FreeBytes>;
// Null when the memory cannot be had.
AlignedBytes AllocateAligned(size_t bytes) {
  return AlignedBytes(static_cast<unsigned char*>(
      std::aligned_alloc(kAlignment, RoundUp(bytes, kAlignment))));
}
absl::Status NoMemory(const std::string& path, size_t bytes) {
  return absl::ResourceExhaustedError(
      absl::StrCat(path, ": no memory for a buffer of ", bytes, " bytes"));
}

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
  // Room for a row after a partial block and the header: the buffer size
  // for rows of `stride` floats.
  static size_t Capacity(int stride) {
    return RoundUp(
        std::max(kBufferBytes, RowBytes(stride) + kHeaderBytes + kAlignment),
        kAlignment);
  }

  // `buffer` holds Capacity(info.stride) bytes.
  TableFileWriterImpl(std::unique_ptr<DurableFile> file,
                      const TableFileInfo& info, AlignedBytes buffer)
      : file_(std::move(file)),
        info_(info),
        row_bytes_(RowBytes(info.stride)),
        capacity_(Capacity(info.stride)),
        buffer_(std::move(buffer)) {
    unsigned char* header = buffer_.get();
    std::memset(header, 0, kHeaderBytes);
    std::memcpy(header, kMagic, sizeof(kMagic));
    Put32(header + kVersionAt, kVersion);
    Put32(header + kTableIdAt, static_cast<uint32_t>(info.table_id));
    Put32(header + kDimAt, static_cast<uint32_t>(info.dim));
    Put32(header + kStrideAt, static_cast<uint32_t>(info.stride));
    Put32(header + kOptimizerAt, static_cast<uint32_t>(info.optimizer));
    Put32(header + kHeaderBytesAt, kHeaderBytes);
    used_ = kHeaderBytes;
  }

  absl::Status Append(uint64_t key, const float* row) override {
    return AppendRows(&key, row, 1);
  }

  absl::Status AppendRows(const uint64_t* keys, const float* rows,
                          size_t n) override {
    PETREL_RETURN_IF_ERROR(status_);
    const size_t floats = static_cast<size_t>(info_.stride);
    while (n > 0) {
      if (used_ + row_bytes_ > capacity_) PETREL_RETURN_IF_ERROR(Flush());
      const size_t take = std::min(n, (capacity_ - used_) / row_bytes_);
      unsigned char* p = buffer_.get() + used_;
      for (size_t i = 0; i < take; ++i, p += row_bytes_) {
        const float* row = rows + i * floats;
        Put64(p, keys[i]);
        if (LittleEndianHost()) {
          std::memcpy(p + 8, row, row_bytes_ - 8);
        } else {
          for (size_t j = 0; j < floats; ++j) {
            uint32_t bits;
            std::memcpy(&bits, row + j, 4);
            Put32(p + 8 + 4 * j, bits);
          }
        }
      }
      used_ += take * row_bytes_;
      rows_ += take;
      keys += take;
      rows += take * floats;
      n -= take;
    }
    return absl::OkStatus();
  }

  absl::StatusOr<pb::CheckpointFile> Finish() override {
    PETREL_RETURN_IF_ERROR(status_);
    if (used_ + kFooterBytes > capacity_) PETREL_RETURN_IF_ERROR(Flush());
    Put64(buffer_.get() + used_, rows_);
    std::memcpy(buffer_.get() + used_ + 8, kEndMagic, sizeof(kEndMagic));
    used_ += kFooterBytes;
    PETREL_RETURN_IF_ERROR(Flush());
    if (used_ > 0) {
      // The unaligned tail goes through the page cache.
      status_ = file_->EndDirect();
      PETREL_RETURN_IF_ERROR(status_);
      PETREL_RETURN_IF_ERROR(Flush());
    }
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
  // Writes the buffer; with direct I/O only its whole aligned blocks, the
  // rest moving to the buffer's front.
  absl::Status Flush() {
    const size_t n = file_->direct() ? used_ / kAlignment * kAlignment : used_;
    checksum_.Update(buffer_.get(), n);
    status_ = file_->Write(buffer_.get(), n);
    std::memmove(buffer_.get(), buffer_.get() + n, used_ - n);
    used_ -= n;
    return status_;
  }

  std::unique_ptr<DurableFile> file_;
  const TableFileInfo info_;
  const size_t row_bytes_;
  const size_t capacity_;
  const AlignedBytes buffer_;
  size_t used_ = 0;  // bytes of buffer_ not yet written
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

// Reads a file front to back in blocks of kBufferBytes, with direct I/O
// where the filesystem allows it (the blocks land in the reader's aligned
// buffers, not in the page cache), the next block on a second thread while
// the caller handles the current one.
class BlockReader {
 public:
  BlockReader(const std::string& path, uint64_t size)
      : path_(path),
        size_(size),
        buffers_{AllocateAligned(kBufferBytes), AllocateAligned(kBufferBytes)} {
  }
  ~BlockReader() {
    Wait();
    if (fd_ >= 0) ::close(fd_);
  }
  BlockReader(const BlockReader&) = delete;
  BlockReader& operator=(const BlockReader&) = delete;

  absl::Status Open() {
    if (buffers_[0] == nullptr || buffers_[1] == nullptr) {
      return NoMemory(path_, kBufferBytes);
    }
    fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT);
    if (fd_ < 0) fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) {
      return ErrnoStatus(absl::StatusCode::kUnavailable, "open", path_, errno);
    }
    return absl::OkStatus();
  }
  const std::string& path() const { return path_; }

  // Starts over at the file's first byte.
  void Rewind() {
    Wait();
    offset_ = 0;
    started_ = false;
  }

  // The next block, valid until the next call; empty at the end of the
  // file.
  absl::StatusOr<absl::Span<const unsigned char>> Next() {
    if (!started_) {
      started_ = true;
      Read(current_);
    } else {
      Wait();
      current_ ^= 1;
    }
    PETREL_RETURN_IF_ERROR(status_);
    const size_t got = got_;
    if (got > 0 && offset_ < size_) {
      ahead_ = std::thread([this] { Read(current_ ^ 1); });
    } else {
      got_ = 0;  // the next call returns the end
    }
    return absl::MakeConstSpan(buffers_[current_].get(), got);
  }

 private:
  void Wait() {
    if (ahead_.joinable()) ahead_.join();
  }

  // Reads the block at offset_ into buffers_[b]: sets got_ (0 at the end)
  // and status_.
  void Read(int b) {
    got_ = 0;
    if (offset_ >= size_) return;
    const size_t want =
        static_cast<size_t>(std::min<uint64_t>(kBufferBytes, size_ - offset_));
    // Direct reads are of whole aligned blocks (the last one ends early).
    const size_t ask = RoundUp(want, kAlignment);
    while (true) {
      const ssize_t n =
          ::pread(fd_, buffers_[b].get(), ask, static_cast<off_t>(offset_));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EINVAL) {
        // Direct I/O refused after all: through the page cache then.
        const int flags = ::fcntl(fd_, F_GETFL);
        if ((flags & O_DIRECT) != 0 &&
            ::fcntl(fd_, F_SETFL, flags & ~O_DIRECT) == 0) {
          continue;
        }
      }
      if (n < 0) {
        status_ =
            ErrnoStatus(absl::StatusCode::kUnavailable, "read", path_, errno);
      } else if (n == 0) {
        status_ = absl::DataLossError(
            absl::StrCat("read ", path_, ": file ends at byte ", offset_));
      } else {
        got_ = std::min(static_cast<size_t>(n), want);
        offset_ += got_;
      }
      return;
    }
  }

  const std::string path_;
  const uint64_t size_;
  AlignedBytes buffers_[2];
  int fd_ = -1;
  bool started_ = false;
  int current_ = 0;  // the buffer Next returned last
  // Written by the read-ahead thread, read after it is joined.
  std::thread ahead_;
  uint64_t offset_ = 0;  // of the next block to read
  size_t got_ = 0;       // bytes in the block read last
  absl::Status status_;
};

// Streams the whole file through the checksum.
absl::Status VerifyChecksum(BlockReader& reader, const std::string& path,
                            uint64_t expected) {
  Checksum64Stream checksum;
  reader.Rewind();
  while (true) {
    PETREL_ASSIGN_OR_RETURN(absl::Span<const unsigned char> block,
                            reader.Next());
    if (block.empty()) break;
    checksum.Update(block.data(), block.size());
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

// One chunk of rows, split into keys and values.
struct RowChunk {
  std::vector<uint64_t> keys;
  std::vector<float> values;
  size_t rows = 0;
};

// The rows of a table file, block by block: a row that a block boundary
// splits is put together from both.
class RowStream {
 public:
  RowStream(BlockReader* reader, const TableFileInfo& info, uint64_t rows)
      : reader_(reader),
        info_(info),
        row_bytes_(RowBytes(info.stride)),
        rows_left_(rows) {
    reader_->Rewind();
  }

  // Reads the next block's rows into *chunk (none at the end).
  absl::Status Next(RowChunk* chunk) {
    chunk->rows = 0;
    while (rows_left_ > 0 && chunk->rows == 0) {
      PETREL_ASSIGN_OR_RETURN(absl::Span<const unsigned char> block,
                              reader_->Next());
      if (block.empty()) {
        return absl::DataLossError(
            absl::StrCat(reader_->path(), ": ends before its last row"));
      }
      const unsigned char* p = block.data() + skip_;
      size_t bytes = block.size() - skip_;
      skip_ = 0;
      // The rest of a row split by the block boundary.
      const bool joined = !split_.empty();
      if (joined) {
        const size_t take = std::min(bytes, row_bytes_ - split_.size());
        split_.insert(split_.end(), p, p + take);
        p += take;
        bytes -= take;
        if (split_.size() < row_bytes_) continue;  // a row over 2 blocks
      }
      const size_t rows = static_cast<size_t>(
          std::min<uint64_t>(joined + bytes / row_bytes_, rows_left_));
      chunk->keys.resize(rows);
      chunk->values.resize(rows * info_.stride);
      chunk->rows = rows;
      if (joined) Split(split_.data(), 0, chunk);
      for (size_t i = joined; i < rows; ++i, p += row_bytes_) {
        Split(p, i, chunk);
      }
      rows_left_ -= rows;
      split_.clear();
      if (rows_left_ > 0) split_.assign(p, block.data() + block.size());
    }
    return absl::OkStatus();
  }

  bool done() const { return rows_left_ == 0; }

 private:
  // Row i of *chunk from the row bytes at p.
  void Split(const unsigned char* p, size_t i, RowChunk* chunk) const {
    chunk->keys[i] = LoadLittleEndian64(p);
    float* out = chunk->values.data() + i * info_.stride;
    if (LittleEndianHost()) {
      std::memcpy(out, p + 8, row_bytes_ - 8);
    } else {
      for (int j = 0; j < info_.stride; ++j) {
        const uint32_t bits = LoadLittleEndian32(p + 8 + 4 * j);
        std::memcpy(out + j, &bits, 4);
      }
    }
  }

  BlockReader* const reader_;
  const TableFileInfo info_;
  const size_t row_bytes_;
  uint64_t rows_left_;
  std::vector<unsigned char> split_;  // the start of a row split by a block
  size_t skip_ = kHeaderBytes;        // the header, before the first row
};

// Hands out the rows in chunks of whole rows. A second thread reads and
// splits the next chunk while `fn` handles the current one.
absl::Status ReadRows(BlockReader& reader, const TableFileInfo& info,
                      uint64_t rows,
                      const std::function<absl::Status(
                          const TableFileInfo&, absl::Span<const uint64_t>,
                          absl::Span<const float>)>& fn) {
  RowStream stream(&reader, info, rows);
  RowChunk chunks[2];
  PETREL_RETURN_IF_ERROR(stream.Next(&chunks[0]));
  for (int current = 0; chunks[current].rows > 0; current ^= 1) {
    const RowChunk& chunk = chunks[current];
    absl::Status ahead;
    chunks[current ^ 1].rows = 0;
    std::thread next;
    if (!stream.done()) {
      next = std::thread(
          [&, current] { ahead = stream.Next(&chunks[current ^ 1]); });
    }
    absl::Status handled =
        fn(info, absl::MakeConstSpan(chunk.keys.data(), chunk.rows),
           absl::MakeConstSpan(chunk.values.data(), chunk.rows * info.stride));
    if (next.joinable()) next.join();
    PETREL_RETURN_IF_ERROR(handled);
    PETREL_RETURN_IF_ERROR(ahead);
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
  const size_t capacity = TableFileWriterImpl::Capacity(info.stride);
  AlignedBytes buffer = AllocateAligned(capacity);
  if (buffer == nullptr) return NoMemory(path, capacity);
  PETREL_ASSIGN_OR_RETURN(std::unique_ptr<DurableFile> file,
                          DurableFile::Create(path, /*direct=*/true));
  return std::unique_ptr<TableFileWriter>(
      new TableFileWriterImpl(std::move(file), info, std::move(buffer)));
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
  BlockReader reader(path, size);
  PETREL_RETURN_IF_ERROR(reader.Open());
  PETREL_RETURN_IF_ERROR(VerifyChecksum(reader, path, expected.xxh64()));
  unsigned char header[kHeaderBytes];
  unsigned char footer[kFooterBytes];
  PETREL_RETURN_IF_ERROR(ReadAt(fd.get(), path, 0, header, kHeaderBytes));
  PETREL_RETURN_IF_ERROR(
      ReadAt(fd.get(), path, size - kFooterBytes, footer, kFooterBytes));
  PETREL_ASSIGN_OR_RETURN(TableFileInfo info,
                          ParseLayout(path, header, footer, size, expected));
  return ReadRows(reader, info, expected.rows(), rows);
}

}  // namespace petrel
