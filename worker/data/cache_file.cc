#include "worker/data/cache_file.h"

#include <cerrno>
#include <cstring>
#include <utility>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

#include "base/checksum.h"

namespace petrel {
namespace {

constexpr char kMagic[8] = {'P', 'T', 'R', 'L', 'X', 'C', 0, 1};
constexpr size_t kHeaderBytes = 56;  // through the checksum
constexpr uint32_t kMaxKeyBytes = 1 << 20;

// A Status for a failed file operation: the code follows errno.
absl::Status FileError(absl::string_view what, const std::string& path,
                       int error) {
  const std::string message =
      absl::StrCat(what, " ", path, ": ", std::strerror(error));
  switch (error) {
    case ENOENT:
      return absl::NotFoundError(message);
    case ENOSPC:
    case EDQUOT:
    case EFBIG:
      return absl::ResourceExhaustedError(message);
    case EACCES:
    case EPERM:
    case EROFS:
      return absl::PermissionDeniedError(message);
    default:
      return absl::DataLossError(message);
  }
}

struct Header {
  uint32_t version = 0;
  uint32_t key_bytes = 0;
  uint64_t blocks = 0;
  uint64_t examples = 0;
  uint64_t malformed = 0;
  uint64_t data_bytes = 0;
};

std::string EncodeHeader(const Header& h, absl::string_view key) {
  std::string out(kMagic, sizeof(kMagic));
  auto put = [&out](const auto& v) {
    out.append(reinterpret_cast<const char*>(&v), sizeof(v));
  };
  put(h.version);
  put(h.key_bytes);
  put(h.blocks);
  put(h.examples);
  put(h.malformed);
  put(h.data_bytes);
  const uint64_t sum = Checksum64(key, Checksum64(out));
  put(sum);
  out.append(key.data(), key.size());
  return out;
}

Header DecodeHeader(const char* p) {
  Header h;
  std::memcpy(&h.version, p + 8, 4);
  std::memcpy(&h.key_bytes, p + 12, 4);
  std::memcpy(&h.blocks, p + 16, 8);
  std::memcpy(&h.examples, p + 24, 8);
  std::memcpy(&h.malformed, p + 32, 8);
  std::memcpy(&h.data_bytes, p + 40, 8);
  return h;
}

}  // namespace

absl::StatusOr<std::unique_ptr<CacheFileWriter>> CacheFileWriter::Create(
    const std::string& path, absl::string_view key) {
  std::string temp = absl::StrCat(path, ".tmp.", getpid(), ".",
                                  absl::ToUnixNanos(absl::Now()));
  const int fd =
      open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return FileError("cannot create", temp, errno);
  std::unique_ptr<CacheFileWriter> writer(
      new CacheFileWriter(path, std::move(temp), fd, std::string(key)));
  // A placeholder header (zero counts) until Finish.
  const std::string header = EncodeHeader(Header(), key);
  absl::Status status = writer->Write(header.data(), header.size(), 0);
  if (!status.ok()) return status;
  return writer;
}

CacheFileWriter::CacheFileWriter(std::string path, std::string temp, int fd,
                                 std::string key)
    : path_(std::move(path)),
      temp_(std::move(temp)),
      key_(std::move(key)),
      fd_(fd) {}

CacheFileWriter::~CacheFileWriter() {
  if (fd_ >= 0) close(fd_);
  if (!finished_) unlink(temp_.c_str());
}

absl::Status CacheFileWriter::Write(const char* data, size_t size,
                                    uint64_t offset) {
  while (size > 0) {
    const ssize_t n = pwrite(fd_, data, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return FileError("cannot write", temp_, errno);
    if (n == 0) return FileError("cannot write", temp_, ENOSPC);
    data += n;
    size -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return absl::OkStatus();
}

absl::Status CacheFileWriter::Append(absl::string_view block,
                                     uint64_t examples) {
  const uint64_t offset = kHeaderBytes + key_.size() + data_bytes_;
  absl::Status status = Write(block.data(), block.size(), offset);
  if (!status.ok()) return status;
  data_bytes_ += block.size();
  examples_ += examples;
  ++blocks_;
  return absl::OkStatus();
}

absl::Status CacheFileWriter::Finish(uint64_t malformed_lines) {
  Header h;
  h.version = kCacheFormatVersion;
  h.key_bytes = static_cast<uint32_t>(key_.size());
  h.blocks = blocks_;
  h.examples = examples_;
  h.malformed = malformed_lines;
  h.data_bytes = data_bytes_;
  const std::string header = EncodeHeader(h, key_);
  absl::Status status = Write(header.data(), header.size(), 0);
  if (!status.ok()) return status;
  const int fd = fd_;
  fd_ = -1;
  if (close(fd) != 0) return FileError("cannot write", temp_, errno);
  if (rename(temp_.c_str(), path_.c_str()) != 0) {
    return FileError("cannot rename to", path_, errno);
  }
  finished_ = true;
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<CacheFileReader>> CacheFileReader::Open(
    const std::string& path, absl::string_view key) {
  std::unique_ptr<CacheFileReader> reader(new CacheFileReader(path));
  reader->fd_ = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (reader->fd_ < 0) return FileError("cannot open", path, errno);
  struct stat st;
  if (fstat(reader->fd_, &st) != 0) {
    return FileError("cannot stat", path, errno);
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  char fixed[kHeaderBytes];
  if (size < kHeaderBytes) {
    return absl::DataLossError(
        absl::StrCat(path, " is truncated: ", size, " bytes"));
  }
  absl::Status status = reader->ReadAt(fixed, kHeaderBytes, 0);
  if (!status.ok()) return status;
  if (std::memcmp(fixed, kMagic, sizeof(kMagic)) != 0) {
    return absl::DataLossError(absl::StrCat(path, " is not a cache file"));
  }
  const Header h = DecodeHeader(fixed);
  if (h.version != kCacheFormatVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, " has format version ", h.version, ", not ",
                     kCacheFormatVersion));
  }
  if (h.key_bytes > kMaxKeyBytes || kHeaderBytes + h.key_bytes > size) {
    return absl::DataLossError(absl::StrCat(path, " has a corrupt header"));
  }
  std::string stored_key(h.key_bytes, '\0');
  status = reader->ReadAt(stored_key.data(), h.key_bytes, kHeaderBytes);
  if (!status.ok()) return status;
  if (EncodeHeader(h, stored_key) !=
      absl::StrCat(absl::string_view(fixed, kHeaderBytes), stored_key)) {
    return absl::DataLossError(
        absl::StrCat(path, " has a corrupt header (checksum mismatch)"));
  }
  if (stored_key != key) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, " was built from other input or settings"));
  }
  reader->data_begin_ = kHeaderBytes + h.key_bytes;
  if (size != reader->data_begin_ + h.data_bytes) {
    return absl::DataLossError(absl::StrCat(
        path, " is truncated or overlong: ", size, " bytes, its header says ",
        reader->data_begin_ + h.data_bytes));
  }
  reader->blocks_ = h.blocks;
  reader->examples_ = h.examples;
  reader->malformed_ = h.malformed;
  reader->data_bytes_ = h.data_bytes;
  reader->Rewind();
  return reader;
}

CacheFileReader::~CacheFileReader() {
  if (fd_ >= 0) close(fd_);
}

void CacheFileReader::Rewind() {
  offset_ = data_begin_;
  blocks_read_ = 0;
}

absl::Status CacheFileReader::ReadAt(char* data, size_t size, uint64_t offset) {
  while (size > 0) {
    const ssize_t n = pread(fd_, data, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return FileError("cannot read", path_, errno);
    if (n == 0) {
      return absl::DataLossError(
          absl::StrCat(path_, " is truncated at byte ", offset));
    }
    data += n;
    size -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> CacheFileReader::NextBlock(std::string* buffer,
                                                internal::BlockView* view) {
  const uint64_t end = data_begin_ + data_bytes_;
  if (blocks_read_ == blocks_) {
    if (offset_ != end) {
      return absl::DataLossError(
          absl::StrCat(path_, ": bytes after the last block"));
    }
    return false;
  }
  if (end - offset_ < internal::kBlockHeaderBytes) {
    return absl::DataLossError(
        absl::StrCat(path_, ": block ", blocks_read_, " is cut off"));
  }
  buffer->resize(internal::kBlockHeaderBytes);
  absl::Status status =
      ReadAt(buffer->data(), internal::kBlockHeaderBytes, offset_);
  if (!status.ok()) return status;
  const uint64_t payload = internal::BlockPayloadBytes(buffer->data());
  if (payload > end - offset_ - internal::kBlockHeaderBytes) {
    return absl::DataLossError(
        absl::StrCat(path_, ": block ", blocks_read_, " is cut off"));
  }
  buffer->resize(internal::kBlockHeaderBytes + payload);
  status = ReadAt(buffer->data() + internal::kBlockHeaderBytes, payload,
                  offset_ + internal::kBlockHeaderBytes);
  if (!status.ok()) return status;
  absl::StatusOr<internal::BlockView> parsed = internal::ParseBlock(*buffer);
  if (!parsed.ok()) {
    return absl::DataLossError(absl::StrCat(path_, ": block ", blocks_read_,
                                            ": ", parsed.status().message()));
  }
  *view = *parsed;
  offset_ += buffer->size();
  ++blocks_read_;
  return true;
}

}  // namespace petrel
