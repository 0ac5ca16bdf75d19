#include "checkpoint/durable_file.h"

#include <cstdio>
#include <system_error>
#include <utility>

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"

#include "base/status_macros.h"

namespace petrel {
namespace {

// Dirty bytes a writer lets pile up before it starts their writeback, so
// that the final fsync has little left to do and the disk works while the
// writer fills its next buffers (like RocksDB's bytes_per_sync).
constexpr uint64_t kWritebackBytes = uint64_t{32} << 20;

}  // namespace

std::string ErrnoText(int err) {
  return std::error_code(err, std::generic_category()).message();
}

absl::Status ErrnoStatus(absl::StatusCode code, const std::string& op,
                         const std::string& path, int err) {
  return absl::Status(code, absl::StrCat(op, " ", path, ": ", ErrnoText(err)));
}

std::string DirName(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string BaseName(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

absl::Status SyncDir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    return ErrnoStatus(absl::StatusCode::kUnavailable, "open", dir, errno);
  }
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  // Some filesystems cannot fsync a directory (EINVAL); their entries are
  // as durable as they get then.
  if (rc != 0 && err != EINVAL) {
    return ErrnoStatus(absl::StatusCode::kUnavailable, "fsync", dir, err);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<DurableFile>> DurableFile::Create(
    const std::string& path, bool direct) {
  const std::string tmp = path + ".tmp";
  const int flags = O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC;
  int fd = -1;
  if (direct) {
    // tmpfs and some others refuse O_DIRECT (EINVAL): buffered then.
    fd = ::open(tmp.c_str(), flags | O_DIRECT, 0644);
    direct = fd >= 0;
  }
  if (fd < 0) fd = ::open(tmp.c_str(), flags, 0644);
  if (fd < 0) {
    return ErrnoStatus(absl::StatusCode::kUnavailable, "create", tmp, errno);
  }
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  return std::unique_ptr<DurableFile>(new DurableFile(path, fd, direct));
}

DurableFile::DurableFile(std::string path, int fd, bool direct)
    : path_(std::move(path)),
      tmp_path_(path_ + ".tmp"),
      fd_(fd),
      direct_(direct) {}

absl::Status DurableFile::EndDirect() {
  if (!direct_ || fd_ < 0) return absl::OkStatus();
  const int flags = ::fcntl(fd_, F_GETFL);
  if (flags < 0 || ::fcntl(fd_, F_SETFL, flags & ~O_DIRECT) != 0) {
    return ErrnoStatus(absl::StatusCode::kUnavailable, "fcntl", tmp_path_,
                       errno);
  }
  direct_ = false;
  return absl::OkStatus();
}

DurableFile::~DurableFile() {
  if (!committed_) Abandon();
}

void DurableFile::Abandon() {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
  ::unlink(tmp_path_.c_str());
}

absl::Status DurableFile::Write(const void* data, size_t size) {
  if (fd_ < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("write ", tmp_path_, ": file already closed"));
  }
  const auto* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd_, p, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EINVAL && direct_) {
        // Opened for direct I/O but refusing it: the page cache it is.
        PETREL_RETURN_IF_ERROR(EndDirect());
        continue;
      }
      return ErrnoStatus(absl::StatusCode::kUnavailable, "write", tmp_path_,
                         errno);
    }
    if (n == 0) {
      return ErrnoStatus(absl::StatusCode::kUnavailable, "write", tmp_path_,
                         ENOSPC);
    }
    p += n;
    size -= static_cast<size_t>(n);
    bytes_written_ += static_cast<uint64_t>(n);
  }
#ifdef SYNC_FILE_RANGE_WRITE
  if (!direct_ && bytes_written_ - synced_to_ >= kWritebackBytes) {
    // Only a hint: an error here shows up again at fsync.
    ::sync_file_range(fd_, static_cast<off_t>(synced_to_),
                      static_cast<off_t>(bytes_written_ - synced_to_),
                      SYNC_FILE_RANGE_WRITE);
    synced_to_ = bytes_written_;
  }
#endif
  return absl::OkStatus();
}

absl::Status DurableFile::Commit() {
  if (fd_ < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("commit ", tmp_path_, ": file already closed"));
  }
  if (::fsync(fd_) != 0) {
    const int err = errno;
    Abandon();
    return ErrnoStatus(absl::StatusCode::kUnavailable, "fsync", tmp_path_, err);
  }
  const int rc = ::close(fd_);
  fd_ = -1;
  if (rc != 0) {
    const int err = errno;
    Abandon();
    return ErrnoStatus(absl::StatusCode::kUnavailable, "close", tmp_path_, err);
  }
  if (::rename(tmp_path_.c_str(), path_.c_str()) != 0) {
    const int err = errno;
    Abandon();
    return absl::UnavailableError(absl::StrCat("rename ", tmp_path_, " to ",
                                               path_, ": ", ErrnoText(err)));
  }
  committed_ = true;
  return SyncDir(DirName(path_));
}

}  // namespace petrel
