// DurableFile: a file written under a temporary name and made durable as a
// whole, the way every file of a checkpoint is written:
//
//   PATH.tmp is created (replacing a leftover one), written, fsynced, and
//   renamed to PATH; then PATH's directory is fsynced, so after Commit
//   returns the file is there under its final name even across a crash.
//   Until then PATH is untouched, and a DurableFile destroyed without a
//   successful Commit removes PATH.tmp.
//
// Errors name the path and the reason (errno text), e.g. "write
// /ckpt/table-1-server-0.bin.tmp: File too large".
//
// Also the filesystem helpers the checkpoint library shares: errno text,
// fsync of a directory, the parent of a path.
//
// Thread safety: a DurableFile is used by one thread.
#ifndef PETREL_CHECKPOINT_DURABLE_FILE_H_
#define PETREL_CHECKPOINT_DURABLE_FILE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace petrel {

class DurableFile {
 public:
  // Writes of a file opened for direct I/O must be of a multiple of this
  // many bytes, from an address aligned to it.
  static constexpr size_t kDirectAlignment = 4096;

  // Creates PATH.tmp. With `direct`, opens it for direct I/O (O_DIRECT:
  // writes go from the caller's buffer to the device, not through the page
  // cache) where the filesystem allows it; direct() says whether it did.
  // Unavailable naming it and the reason when it cannot be created.
  static absl::StatusOr<std::unique_ptr<DurableFile>> Create(
      const std::string& path, bool direct = false);
  ~DurableFile();
  DurableFile(const DurableFile&) = delete;
  DurableFile& operator=(const DurableFile&) = delete;

  // Writes all `size` bytes (unbuffered: callers write large buffers).
  // Unavailable naming PATH.tmp when a write fails (e.g. a full disk).
  // REQUIRES while direct(): `data` and `size` aligned to
  // kDirectAlignment. A filesystem that refuses a direct write (EINVAL)
  // gets it, and the later ones, through the page cache.
  absl::Status Write(const void* data, size_t size);
  // Whether writes are direct.
  bool direct() const { return direct_; }
  // Ends direct I/O: later writes (e.g. a file's unaligned tail) go through
  // the page cache. Unavailable naming PATH.tmp on failure.
  absl::Status EndDirect();
  // fsync, close, rename to PATH, fsync of PATH's directory. On an error
  // PATH.tmp is removed and PATH is untouched. Call at most once.
  absl::Status Commit();

  const std::string& path() const { return path_; }
  uint64_t bytes_written() const { return bytes_written_; }

 private:
  DurableFile(std::string path, int fd, bool direct);
  void Abandon();

  const std::string path_;
  const std::string tmp_path_;
  int fd_;  // -1 once closed
  uint64_t bytes_written_ = 0;
  uint64_t synced_to_ = 0;  // writeback started up to here
  bool committed_ = false;
  bool direct_;
};

// The text of errno value `err` ("No space left on device").
std::string ErrnoText(int err);
// "OP PATH: errno text" as an absl::Status with `code`.
absl::Status ErrnoStatus(absl::StatusCode code, const std::string& op,
                         const std::string& path, int err);
// fsyncs directory `dir`, making the entries created in it durable.
absl::Status SyncDir(const std::string& dir);
// The directory part of `path` ("." when it has none).
std::string DirName(const std::string& path);
// The last component of `path`.
std::string BaseName(const std::string& path);

}  // namespace petrel

#endif  // PETREL_CHECKPOINT_DURABLE_FILE_H_
