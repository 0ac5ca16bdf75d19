// CheckpointRootLock: one job writes a checkpoint root at a time.
//
// The scheduler of a job with a checkpoint directory holds an exclusive
// flock(2) on ROOT/LOCK for as long as it runs; the file records the
// holder ("pid 1234 on host-a since 2026-12-06T13:40:00Z"). A second job
// pointed at the same root (a restarted job while the old one's processes
// still run, two jobs with one directory) is refused at start with
// FailedPrecondition naming the holder, instead of the two creating,
// retaining and removing each other's checkpoints. The kernel drops the
// lock when the holder exits, however it exits (kill -9 included), so a
// restart after a crash finds the root free.
//
// Thread safety: thread-compatible.
#ifndef PETREL_CHECKPOINT_ROOT_LOCK_H_
#define PETREL_CHECKPOINT_ROOT_LOCK_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace petrel {

inline constexpr char kRootLockName[] = "LOCK";

class CheckpointRootLock {
 public:
  // Locks `root` (which must exist and be writable: CheckWritableDir),
  // waiting up to `wait` for a holder to go (a job killed a moment ago
  // whose processes are still on their way out). FailedPrecondition naming
  // the holder when another process (or another CheckpointRootLock of this
  // one) still holds it then; Unavailable naming the path when the lock
  // file cannot be opened.
  static absl::StatusOr<std::unique_ptr<CheckpointRootLock>> Acquire(
      const std::string& root, absl::Duration wait = absl::ZeroDuration());
  ~CheckpointRootLock();  // releases the lock
  CheckpointRootLock(const CheckpointRootLock&) = delete;
  CheckpointRootLock& operator=(const CheckpointRootLock&) = delete;

 private:
  explicit CheckpointRootLock(int fd) : fd_(fd) {}
  const int fd_;
};

}  // namespace petrel

#endif  // PETREL_CHECKPOINT_ROOT_LOCK_H_
