#include "worker/data/sharded_line_reader.h"

#include <cerrno>
#include <cstring>
#include <utility>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

namespace petrel {
namespace {

absl::Status FileError(absl::string_view what, const std::string& path,
                       int error) {
  std::string message = absl::StrCat(what, " ", path, ": ", strerror(error));
  if (error == ENOENT) return absl::NotFoundError(message);
  return absl::DataLossError(message);
}

}  // namespace

absl::StatusOr<std::unique_ptr<ShardedLineReader>> ShardedLineReader::Open(
    const std::vector<std::string>& files, int rank, int num_workers,
    size_t buffer_bytes) {
  if (files.empty()) return absl::InvalidArgumentError("no input files");
  if (num_workers < 1 || rank < 0 || rank >= num_workers) {
    return absl::InvalidArgumentError(absl::StrCat(
        "worker rank ", rank, " is not in [0, ", num_workers, ")"));
  }
  if (buffer_bytes < 16) {
    return absl::InvalidArgumentError(
        absl::StrCat("read buffer of ", buffer_bytes, " bytes is below 16"));
  }
  std::vector<FileInfo> infos;
  uint64_t total = 0;
  for (const std::string& path : files) {
    struct stat st;
    if (stat(path.c_str(), &st) != 0)
      return FileError("cannot stat", path, errno);
    if (!S_ISREG(st.st_mode)) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, " is not a regular file"));
    }
    infos.push_back({path, static_cast<uint64_t>(st.st_size), total});
    total += static_cast<uint64_t>(st.st_size);
  }
  using U128 = unsigned __int128;
  const uint64_t begin =
      static_cast<uint64_t>(U128{total} * rank / num_workers);
  const uint64_t end =
      static_cast<uint64_t>(U128{total} * (rank + 1) / num_workers);
  return std::unique_ptr<ShardedLineReader>(
      new ShardedLineReader(std::move(infos), begin, end, buffer_bytes));
}

ShardedLineReader::ShardedLineReader(std::vector<FileInfo> files,
                                     uint64_t begin, uint64_t end,
                                     size_t buffer_bytes)
    : files_(std::move(files)),
      share_begin_(begin),
      share_end_(end),
      buffer_(buffer_bytes) {}

ShardedLineReader::~ShardedLineReader() { CloseFile(); }

void ShardedLineReader::CloseFile() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  buf_pos_ = buf_end_ = 0;
}

void ShardedLineReader::Rewind() {
  CloseFile();
  file_index_ = 0;
}

absl::Status ShardedLineReader::Fill() {
  const FileInfo& file = files_[file_index_];
  if (buf_pos_ > 0) {
    std::memmove(buffer_.data(), buffer_.data() + buf_pos_,
                 buf_end_ - buf_pos_);
    buf_end_ -= buf_pos_;
    buf_pos_ = 0;
  }
  if (buf_end_ == buffer_.size()) buffer_.resize(buffer_.size() * 2);
  const uint64_t want =
      std::min<uint64_t>(buffer_.size() - buf_end_, file.size - read_offset_);
  ssize_t got;
  do {
    got = pread(fd_, buffer_.data() + buf_end_, want, read_offset_);
  } while (got < 0 && errno == EINTR);
  if (got < 0) return FileError("cannot read", file.path, errno);
  if (got == 0) {
    return absl::DataLossError(
        absl::StrCat(file.path, " is truncated: it ends at byte ", read_offset_,
                     " but had ", file.size, " bytes when opened"));
  }
  buf_end_ += static_cast<size_t>(got);
  read_offset_ += static_cast<uint64_t>(got);
  return absl::OkStatus();
}

absl::StatusOr<bool> ShardedLineReader::SkipPastNewline(uint64_t offset) {
  read_offset_ = offset;
  const uint64_t size = files_[file_index_].size;
  while (true) {
    if (buf_pos_ == buf_end_) {
      if (read_offset_ >= size) return false;
      absl::Status status = Fill();
      if (!status.ok()) return status;
    }
    const char* start = buffer_.data() + buf_pos_;
    const void* nl = std::memchr(start, '\n', buf_end_ - buf_pos_);
    if (nl != nullptr) {
      buf_pos_ = static_cast<const char*>(nl) - buffer_.data() + 1;
      line_offset_ = read_offset_ - (buf_end_ - buf_pos_);
      return true;
    }
    buf_pos_ = buf_end_;
  }
}

absl::StatusOr<bool> ShardedLineReader::OpenNextFile() {
  for (; file_index_ < files_.size(); ++file_index_) {
    const FileInfo& file = files_[file_index_];
    if (file.global_begin >= share_end_) break;
    if (file.size == 0 || file.global_begin + file.size <= share_begin_) {
      continue;
    }
    fd_ = open(file.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) return FileError("cannot open", file.path, errno);
    buf_pos_ = buf_end_ = 0;
    lines_read_ = 0;
    read_offset_ = line_offset_ = 0;
    first_line_ = 1;
    if (share_begin_ > file.global_begin) {
      // The line holding byte start-1 belongs to an earlier share; ours
      // begins after its newline.
      first_line_ = 0;
      absl::StatusOr<bool> found =
          SkipPastNewline(share_begin_ - file.global_begin - 1);
      if (!found.ok()) return found.status();
      if (!*found) {
        CloseFile();
        continue;
      }
    }
    first_offset_ = line_offset_;
    return true;
  }
  file_index_ = files_.size();
  return false;
}

absl::StatusOr<bool> ShardedLineReader::NextLine(absl::string_view* line) {
  while (true) {
    if (fd_ < 0) {
      absl::StatusOr<bool> opened = OpenNextFile();
      if (!opened.ok() || !*opened) return opened;
    }
    const FileInfo& file = files_[file_index_];
    if (line_offset_ >= file.size ||
        file.global_begin + line_offset_ >= share_end_) {
      CloseFile();
      ++file_index_;
      continue;
    }
    const char* start = buffer_.data() + buf_pos_;
    const size_t avail = buf_end_ - buf_pos_;
    const void* nl = std::memchr(start, '\n', avail);
    size_t length;
    if (nl != nullptr) {
      length = static_cast<const char*>(nl) - start;
      buf_pos_ += length + 1;
      line_offset_ += length + 1;
    } else if (read_offset_ >= file.size) {
      length = avail;  // the last line has no '\n'
      buf_pos_ = buf_end_;
      line_offset_ += length;
    } else {
      absl::Status status = Fill();
      if (!status.ok()) return status;
      continue;
    }
    if (length > 0 && start[length - 1] == '\r') --length;
    *line = absl::string_view(start, length);
    ++lines_read_;
    return true;
  }
}

uint64_t ShardedLineReader::next_offset() const {
  if (fd_ >= 0) return files_[file_index_].global_begin + line_offset_;
  return file_index_ < files_.size() ? share_begin_ : share_end_;
}

absl::Status ShardedLineReader::Seek(uint64_t offset) {
  if (offset < share_begin_) {
    return absl::InvalidArgumentError(
        absl::StrCat("byte offset ", offset, " is before this share's range [",
                     share_begin_, ", ", share_end_, ")"));
  }
  if (offset == share_begin_) {
    Rewind();
    return absl::OkStatus();
  }
  // The file holding byte `offset` (empty files hold none).
  size_t index = 0;
  while (index < files_.size() &&
         files_[index].global_begin + files_[index].size <= offset) {
    ++index;
  }
  if (offset >= share_end_ || index == files_.size()) {
    CloseFile();
    file_index_ = files_.size();
    return absl::OkStatus();
  }
  const FileInfo& file = files_[index];
  const uint64_t local = offset - file.global_begin;
  const int fd = open(file.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return FileError("cannot open", file.path, errno);
  if (local > 0) {
    char before = 0;
    ssize_t got;
    do {
      got = pread(fd, &before, 1, static_cast<off_t>(local - 1));
    } while (got < 0 && errno == EINTR);
    const int error = errno;
    if (got != 1 || before != '\n') {
      close(fd);
      if (got < 0) return FileError("cannot read", file.path, error);
      return absl::InvalidArgumentError(
          absl::StrCat("byte offset ", offset, " (", file.path, " byte ", local,
                       ") is not at the start of a line"));
    }
  }
  CloseFile();
  file_index_ = index;
  fd_ = fd;
  read_offset_ = line_offset_ = first_offset_ = local;
  lines_read_ = 0;
  first_line_ = local == 0 ? 1 : 0;  // else counted when first asked
  return absl::OkStatus();
}

const std::string& ShardedLineReader::file() const {
  CHECK(fd_ >= 0) << "file() without a current line";
  return files_[file_index_].path;
}

absl::StatusOr<int64_t> ShardedLineReader::line_number() {
  CHECK(fd_ >= 0) << "line_number() without a current line";
  if (first_line_ == 0) {
    // Count the newlines before the share's first line in this file.
    std::vector<char> chunk(1 << 20);
    int64_t newlines = 0;
    for (uint64_t offset = 0; offset < first_offset_;) {
      const size_t want =
          std::min<uint64_t>(chunk.size(), first_offset_ - offset);
      const ssize_t got = pread(fd_, chunk.data(), want, offset);
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) return FileError("cannot read", file(), errno);
      if (got == 0) return absl::DataLossError(file() + " is truncated");
      for (ssize_t i = 0; i < got; ++i) newlines += chunk[i] == '\n';
      offset += static_cast<uint64_t>(got);
    }
    first_line_ = newlines + 1;
  }
  return first_line_ + lines_read_ - 1;
}

}  // namespace petrel
