#include "tools/launch/subprocess.h"

#include <cerrno>
#include <string>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

#include "tools/launch/executable_path.h"

extern char** environ;

namespace petrel {
namespace {

// How many trailing lines a DeadlineExceeded from WaitForLine() quotes.
constexpr size_t kLinesInError = 10;
// Longer output without a newline is cut into lines of this size.
constexpr size_t kMaxLineBytes = 64 * 1024;

// Owns up to two file descriptors; closes them unless released.
struct FdPair {
  int fd[2] = {-1, -1};
  FdPair() = default;
  FdPair(const FdPair&) = delete;
  FdPair& operator=(const FdPair&) = delete;
  ~FdPair() {
    for (int f : fd) {
      if (f >= 0) close(f);
    }
  }
  int Release(int i) { return std::exchange(fd[i], -1); }
};

// Creates a close-on-exec pipe whose ends are both >= 3, so that dup2() onto
// stdout/stderr in the child never aliases them.
absl::Status MakePipe(FdPair& pipe) {
  if (pipe2(pipe.fd, O_CLOEXEC) != 0) {
    return absl::ErrnoToStatus(errno, "pipe2");
  }
  for (int& f : pipe.fd) {
    if (f >= 3) continue;
    int moved = fcntl(f, F_DUPFD_CLOEXEC, 3);
    if (moved < 0) return absl::ErrnoToStatus(errno, "fcntl(F_DUPFD_CLOEXEC)");
    close(f);
    f = moved;
  }
  return absl::OkStatus();
}

// The parent's environment with `overrides` applied, as "KEY=VALUE" strings.
std::vector<std::string> MergedEnvironment(
    const std::vector<std::pair<std::string, std::string>>& overrides) {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    env.emplace_back(*e);
  }
  for (const auto& [key, value] : overrides) {
    const std::string prefix = key + "=";
    std::string entry = prefix + value;
    bool replaced = false;
    for (std::string& existing : env) {
      if (absl::StartsWith(existing, prefix)) {
        existing = entry;
        replaced = true;
      }
    }
    if (!replaced) env.push_back(std::move(entry));
  }
  return env;
}

// Resolves `name` the way execvp() would, using PATH from `env`, so that the
// child does not need to search (and allocate) between fork and exec.
std::optional<std::string> FindOnPath(const std::string& name,
                                      const std::vector<std::string>& env) {
  std::string path = "/usr/local/bin:/usr/bin:/bin";
  for (const std::string& entry : env) {
    if (absl::StartsWith(entry, "PATH=")) path = entry.substr(5);
  }
  return FindOnSearchPath(name, path);
}

// Everything the child needs, prepared before fork().
struct ExecPlan {
  const char* path;
  std::vector<char*> argv;
  std::vector<char*> envp;
  int in_fd;  // -1: inherit stdin.
  int out_fd;
  int err_fd;
  int max_fd;
  bool new_process_group;
  pid_t die_with = 0;  // the parent's pid; 0: outlive it
};

std::vector<char*> CStrings(std::vector<std::string>& strings) {
  std::vector<char*> result;
  for (std::string& s : strings) result.push_back(s.data());
  result.push_back(nullptr);
  return result;
}

int MaxFd() {
  struct rlimit limit;
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur > 65536) {
    return 65536;
  }
  return static_cast<int>(limit.rlim_cur);
}

// Closes descriptors [first, last], preferring close_range(2).
void CloseRange(int first, int last, int max_fd) {
  if (first > last) return;
#ifdef SYS_close_range
  if (syscall(SYS_close_range, static_cast<unsigned>(first),
              static_cast<unsigned>(last), 0u) == 0) {
    return;
  }
#endif
  for (int fd = first; fd <= last && fd < max_fd; ++fd) close(fd);
}

// Runs in the forked child. The parent may have other threads, so only
// async-signal-safe calls are allowed here.
[[noreturn]] void ExecChild(const ExecPlan& plan) {
  if (plan.new_process_group) setpgid(0, 0);
  if (plan.die_with != 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    // The parent died before the prctl: no signal will come.
    if (getppid() != plan.die_with) _exit(127);
  }
  if (plan.in_fd >= 0) dup2(plan.in_fd, STDIN_FILENO);
  dup2(plan.out_fd, STDOUT_FILENO);
  dup2(plan.out_fd, STDERR_FILENO);
  sigset_t empty;
  sigemptyset(&empty);
  sigprocmask(SIG_SETMASK, &empty, nullptr);
  struct sigaction default_action = {};
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  for (int sig = 1; sig < NSIG; ++sig) sigaction(sig, &default_action, nullptr);
  // Keep err_fd (close-on-exec) to report a failed exec.
  CloseRange(3, plan.err_fd - 1, plan.max_fd);
  CloseRange(plan.err_fd + 1, plan.max_fd, plan.max_fd);
  execve(plan.path, plan.argv.data(), plan.envp.data());
  int error = errno;
  ssize_t ignored = write(plan.err_fd, &error, sizeof(error));
  (void)ignored;
  _exit(127);
}

// Reads the errno a failed exec reports; 0 when the exec succeeded.
int ReadExecError(int fd) {
  int error = 0;
  size_t got = 0;
  while (got < sizeof(error)) {
    ssize_t n =
        read(fd, reinterpret_cast<char*>(&error) + got, sizeof(error) - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return 0;
    got += static_cast<size_t>(n);
  }
  return error;
}

int ExitCodeFromStatus(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 128;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Subprocess>> Subprocess::Start(Options options) {
  if (options.argv.empty()) {
    return absl::InvalidArgumentError("subprocess argv is empty");
  }
  const std::string& name = options.argv[0];
  std::vector<std::string> env = MergedEnvironment(options.env);
  std::string path = name;
  if (name.find('/') == std::string::npos) {
    std::optional<std::string> found = FindOnPath(name, env);
    if (!found) {
      return absl::NotFoundError(
          absl::StrCat("cannot run '", name, "': not found on PATH"));
    }
    path = *found;
  }
  FdPair in, out, err, wake;
  for (FdPair* p : {&out, &err, &wake}) {
    if (absl::Status s = MakePipe(*p); !s.ok()) return s;
  }
  if (options.pipe_stdin) {
    if (absl::Status s = MakePipe(in); !s.ok()) return s;
  }
  std::vector<std::string> argv = options.argv;
  ExecPlan plan{path.c_str(),
                CStrings(argv),
                CStrings(env),
                in.fd[0],
                out.fd[1],
                err.fd[1],
                MaxFd(),
                options.new_process_group,
                options.die_with_parent ? getpid() : 0};
  pid_t pid = fork();
  if (pid < 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("fork for '", name, "'"));
  }
  if (pid == 0) ExecChild(plan);
  close(out.Release(1));
  close(err.Release(1));
  if (in.fd[0] >= 0) close(in.Release(0));
  if (int error = ReadExecError(err.fd[0]); error != 0) {
    waitpid(pid, nullptr, 0);
    return absl::ErrnoToStatus(error, absl::StrCat("cannot run '", name, "'"));
  }
  fcntl(out.fd[0], F_SETFL, fcntl(out.fd[0], F_GETFL) | O_NONBLOCK);
  // pidfds are close-on-exec. Without them (kernel < 5.3, seccomp) the reader
  // falls back to end-of-file on the pipe, then a blocking wait.
  int pid_fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  std::unique_ptr<Subprocess> proc(
      new Subprocess(std::move(options), pid, out.Release(0), pid_fd,
                     wake.Release(0), wake.Release(1), in.Release(1)));
  proc->reader_ = std::thread(&Subprocess::ReadLoop, proc.get());
  return proc;
}

Subprocess::Subprocess(Options options, pid_t pid, int out_fd, int pid_fd,
                       int wake_read, int wake_write, int in_fd)
    : options_(std::move(options)),
      pid_(pid),
      out_fd_(out_fd),
      pid_fd_(pid_fd),
      wake_read_(wake_read),
      wake_write_(wake_write),
      in_fd_(in_fd) {}

Subprocess::~Subprocess() {
  Signal(SIGKILL);
  CloseStdin();
  char byte = 0;
  ssize_t ignored = write(wake_write_, &byte, 1);
  (void)ignored;
  if (reader_.joinable()) reader_.join();
  for (int fd : {out_fd_, pid_fd_, wake_read_, wake_write_}) {
    if (fd >= 0) close(fd);
  }
}

void Subprocess::ReadLoop() {
  bool out_open = true;
  while (true) {
    pollfd fds[3];
    nfds_t n = 0;
    const nfds_t out_index = out_open ? n++ : 3;
    if (out_open) fds[out_index] = {out_fd_, POLLIN, 0};
    const nfds_t pid_index = pid_fd_ >= 0 ? n++ : 3;
    if (pid_fd_ >= 0) fds[pid_index] = {pid_fd_, POLLIN, 0};
    const nfds_t wake_index = n++;
    fds[wake_index] = {wake_read_, POLLIN, 0};
    if (poll(fds, n, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (out_open && fds[out_index].revents != 0) out_open = ReadAvailable();
    if (pid_fd_ >= 0 && fds[pid_index].revents != 0) break;  // Exited.
    if (fds[wake_index].revents != 0) break;  // Destructor killed the child.
    if (!out_open && pid_fd_ < 0) break;
  }
  // The child has exited (or is dying): keep what it wrote before that. A
  // grandchild may still hold the pipe open, so don't wait for end of file.
  if (out_open) ReadAvailable();
  if (!partial_.empty()) EmitLine(std::exchange(partial_, ""));
  // Wait for the child to become a zombie without reaping it; it is reaped
  // under mu_ so that Signal() never targets a pid the kernel has reused.
  siginfo_t info;
  while (waitid(P_PID, pid_, &info, WEXITED | WNOWAIT) < 0 && errno == EINTR) {
  }
  ReapAndRecordExit();
}

bool Subprocess::ReadAvailable() {
  char buf[4096];
  while (true) {
    ssize_t n = read(out_fd_, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK;
    if (n == 0) return false;
    size_t start = partial_.size();
    partial_.append(buf, static_cast<size_t>(n));
    size_t line_begin = 0;
    for (size_t i = start; i < partial_.size(); ++i) {
      if (partial_[i] != '\n') continue;
      EmitLine(partial_.substr(line_begin, i - line_begin));
      line_begin = i + 1;
    }
    partial_.erase(0, line_begin);
    while (partial_.size() >= kMaxLineBytes) {
      EmitLine(partial_.substr(0, kMaxLineBytes));
      partial_.erase(0, kMaxLineBytes);
    }
  }
}

void Subprocess::EmitLine(std::string line) {
  if (options_.on_line) options_.on_line(line);
  absl::MutexLock lock(&mu_);
  lines_.push_back(std::move(line));
  if (options_.max_kept_lines > 0 && lines_.size() > options_.max_kept_lines) {
    lines_.pop_front();
    ++dropped_lines_;
  }
  changed_.SignalAll();
}

void Subprocess::ReapAndRecordExit() {
  int exit_code = 0;
  {
    absl::MutexLock lock(&mu_);
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    exit_code = ExitCodeFromStatus(status);
    exit_code_ = exit_code;
    changed_.SignalAll();
  }
  if (options_.on_exit) options_.on_exit(exit_code);
}

absl::StatusOr<std::string> Subprocess::WaitForLine(std::string_view needle,
                                                    absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  const absl::string_view needle_text(needle.data(), needle.size());
  absl::MutexLock lock(&mu_);
  uint64_t next = 0;  // Index, counting dropped lines, of the next to scan.
  while (true) {
    next = std::max(next, dropped_lines_);
    for (; next < dropped_lines_ + lines_.size(); ++next) {
      const std::string& line = lines_[next - dropped_lines_];
      if (line.find(needle) != std::string::npos) return line;
    }
    if (exit_code_.has_value()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "'", options_.argv[0], "' exited with code ", *exit_code_,
          " without printing a line containing '", needle_text, "'"));
    }
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "no line containing '", needle_text, "' from '", options_.argv[0],
          "' within ", absl::FormatDuration(timeout), "; last lines:\n",
          LastLines(kLinesInError)));
    }
    changed_.WaitWithDeadline(&mu_, deadline);
  }
}

absl::StatusOr<int> Subprocess::Wait(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  absl::MutexLock lock(&mu_);
  while (!exit_code_.has_value() && absl::Now() < deadline) {
    changed_.WaitWithDeadline(&mu_, deadline);
  }
  if (!exit_code_.has_value()) {
    return absl::DeadlineExceededError(
        absl::StrCat("'", options_.argv[0], "' (pid ", pid_,
                     ") still running after ", absl::FormatDuration(timeout)));
  }
  return *exit_code_;
}

bool Subprocess::Running() {
  absl::MutexLock lock(&mu_);
  return !exit_code_.has_value();
}

void Subprocess::Signal(int sig) {
  // Holding mu_ keeps the reader from reaping the child (and freeing its pid
  // for reuse) between the check and kill().
  absl::MutexLock lock(&mu_);
  if (!exit_code_.has_value()) kill(pid_, sig);
}

void Subprocess::CloseStdin() {
  absl::MutexLock lock(&mu_);
  if (in_fd_ >= 0) close(std::exchange(in_fd_, -1));
}

std::string Subprocess::Output() const {
  absl::MutexLock lock(&mu_);
  std::string out;
  for (const std::string& line : lines_) absl::StrAppend(&out, line, "\n");
  return out;
}

std::string Subprocess::LastLines(size_t n) const {
  size_t first = lines_.size() > n ? lines_.size() - n : 0;
  return absl::StrJoin(lines_.begin() + first, lines_.end(), "\n");
}

std::map<std::string, std::string> ParseKeyValues(std::string_view line) {
  std::map<std::string, std::string> result;
  for (absl::string_view token :
       absl::StrSplit(absl::string_view(line.data(), line.size()),
                      absl::ByAnyChar(" \t"), absl::SkipEmpty())) {
    size_t eq = token.find('=');
    if (eq == absl::string_view::npos) continue;
    result[std::string(token.substr(0, eq))] =
        std::string(token.substr(eq + 1));
  }
  return result;
}

}  // namespace petrel
