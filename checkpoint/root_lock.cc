#include "checkpoint/root_lock.h"

#include <cerrno>
#include <string>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "glog/logging.h"

#include "checkpoint/durable_file.h"

namespace petrel {
namespace {

// What the lock file says of its holder; "" when it cannot be read.
std::string ReadHolder(int fd) {
  char buffer[256];
  const ssize_t n = ::pread(fd, buffer, sizeof(buffer) - 1, 0);
  if (n <= 0) return "";
  return std::string(absl::StripAsciiWhitespace(
      absl::string_view(buffer, static_cast<size_t>(n))));
}

std::string HostName() {
  char host[256] = {};
  if (::gethostname(host, sizeof(host) - 1) != 0) return "?";
  return host;
}

}  // namespace

absl::StatusOr<std::unique_ptr<CheckpointRootLock>> CheckpointRootLock::Acquire(
    const std::string& root, absl::Duration wait) {
  const std::string path = absl::StrCat(root, "/", kRootLockName);
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return ErrnoStatus(absl::StatusCode::kUnavailable, "open", path, errno);
  }
  const absl::Time deadline = absl::Now() + wait;
  bool logged = false;
  int locked;
  while (true) {
    locked = ::flock(fd, LOCK_EX | LOCK_NB);
    if (locked == 0 || (errno != EINTR && errno != EWOULDBLOCK)) break;
    if (errno == EWOULDBLOCK) {
      if (absl::Now() >= deadline) break;
      if (!logged) {
        LOG(INFO) << "waiting up to " << absl::FormatDuration(wait)
                  << " for the job holding " << path << " (" << ReadHolder(fd)
                  << ") to exit";
        logged = true;
      }
      // flock(2) has no timed wait: look again shortly.
      absl::SleepFor(absl::Milliseconds(20));
    }
  }
  if (locked != 0) {
    const int err = errno;
    const std::string holder = ReadHolder(fd);
    ::close(fd);
    if (err != EWOULDBLOCK) {
      return ErrnoStatus(absl::StatusCode::kUnavailable, "lock", path, err);
    }
    return absl::FailedPreconditionError(absl::StrCat(
        "checkpoint directory ", root, " is in use by another job (",
        holder.empty() ? "its holder is not recorded" : holder, ", ", path,
        "): stop that job first, or give this one another checkpoint.dir"));
  }
  const std::string holder = absl::StrCat(
      "scheduler pid ", ::getpid(), " on ", HostName(), " since ",
      absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::Now(), absl::UTCTimeZone()),
      "\n");
  // The record is for the message above only: the lock holds without it.
  if (::ftruncate(fd, 0) == 0) {
    const ssize_t ignored = ::pwrite(fd, holder.data(), holder.size(), 0);
    (void)ignored;
  }
  return std::unique_ptr<CheckpointRootLock>(new CheckpointRootLock(fd));
}

CheckpointRootLock::~CheckpointRootLock() { ::close(fd_); }

}  // namespace petrel
