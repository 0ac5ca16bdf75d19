// Cache files of parsed examples: a header naming the input and reader
// settings they were built from (the key), then the encoded blocks of
// worker/data/internal/cache_block.h.
//
// File layout (host byte order):
//   char magic[8] "PTRLXC\0\1", u32 format version, u32 key bytes,
//   u64 blocks, u64 examples, u64 malformed lines skipped while building,
//   u64 data bytes (all blocks), u64 Checksum64 of the 48 bytes before it
//   and the key; the key; the blocks, each with its own checksum.
// A file is written under a temporary name and renamed into place when
// complete, so a reader never sees a half-written file under the real name
// (a crash leaves only a `*.tmp.*` file behind).
//
// Thread safety: not thread-safe; one object per thread. Each owns its fd.
#ifndef PETREL_WORKER_DATA_CACHE_FILE_H_
#define PETREL_WORKER_DATA_CACHE_FILE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

#include "worker/data/internal/cache_block.h"

namespace petrel {

// Bumped whenever the parsers' output or the encoding changes, so older
// cache files are rebuilt.
inline constexpr uint32_t kCacheFormatVersion = 1;

class CacheFileWriter {
 public:
  // Starts writing the cache file `path` for `key` (under a temporary
  // name). Errors from the file system (no such directory, read-only,
  // permission) as a Status naming the file.
  static absl::StatusOr<std::unique_ptr<CacheFileWriter>> Create(
      const std::string& path, absl::string_view key);
  ~CacheFileWriter();  // removes the temporary file unless Finish succeeded
  CacheFileWriter(const CacheFileWriter&) = delete;
  CacheFileWriter& operator=(const CacheFileWriter&) = delete;

  // Appends one encoded block of `examples` examples. Errors as Create
  // (ResourceExhausted when the disk is full).
  absl::Status Append(absl::string_view block, uint64_t examples);
  // Writes the header and renames the file to its path.
  absl::Status Finish(uint64_t malformed_lines);

  uint64_t data_bytes() const { return data_bytes_; }

 private:
  CacheFileWriter(std::string path, std::string temp, int fd, std::string key);
  absl::Status Write(const char* data, size_t size, uint64_t offset);

  const std::string path_;
  const std::string temp_;
  const std::string key_;
  int fd_;
  uint64_t blocks_ = 0;
  uint64_t examples_ = 0;
  uint64_t data_bytes_ = 0;
  bool finished_ = false;
};

class CacheFileReader {
 public:
  // Opens the cache file `path` and checks its header against `key`.
  // NotFound when there is none; FailedPrecondition when it was built for
  // another key (input or settings changed) or format version; DataLoss
  // when the header is corrupt or the file's size does not match it
  // (truncated). The blocks are checked as they are read.
  static absl::StatusOr<std::unique_ptr<CacheFileReader>> Open(
      const std::string& path, absl::string_view key);
  ~CacheFileReader();
  CacheFileReader(const CacheFileReader&) = delete;
  CacheFileReader& operator=(const CacheFileReader&) = delete;

  // Reads the next block into *buffer and checks it into *view (which
  // points into *buffer); false after the last one. DataLoss for a block
  // that fails its checksum or does not fit the file.
  absl::StatusOr<bool> NextBlock(std::string* buffer,
                                 internal::BlockView* view);
  // Goes back to the first block.
  void Rewind();

  uint64_t examples() const { return examples_; }
  uint64_t blocks() const { return blocks_; }
  uint64_t malformed_lines() const { return malformed_; }
  uint64_t data_bytes() const { return data_bytes_; }
  const std::string& path() const { return path_; }

 private:
  explicit CacheFileReader(std::string path) : path_(std::move(path)) {}
  absl::Status ReadAt(char* data, size_t size, uint64_t offset);

  const std::string path_;
  int fd_ = -1;
  uint64_t blocks_ = 0;
  uint64_t examples_ = 0;
  uint64_t malformed_ = 0;
  uint64_t data_bytes_ = 0;
  uint64_t data_begin_ = 0;
  uint64_t offset_ = 0;  // of the next block
  uint64_t blocks_read_ = 0;
};

}  // namespace petrel

#endif  // PETREL_WORKER_DATA_CACHE_FILE_H_
