// Subprocess: runs one child process with its stdout and stderr merged into a
// single pipe that a background thread reads line by line, so the child never
// blocks on a full pipe. Callers can wait for a given output line, wait for the
// exit code, and send signals. Used by petrel-launch and by multi-process
// tests. Also provides ParseKeyValues() for "word key=value ..." lines such as
// the daemons' "PETREL_LISTEN role=scheduler host=... port=..." line.

#ifndef PETREL_TOOLS_LAUNCH_SUBPROCESS_H_
#define PETREL_TOOLS_LAUNCH_SUBPROCESS_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <sys/types.h>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace petrel {

// A running (or finished) child process.
//
// Thread safety: all public methods are thread-safe. The callbacks in Options
// run on the object's reader thread; they must not destroy the Subprocess.
//
// Ownership: the Subprocess owns the child. Destroying it SIGKILLs a child that
// is still running, reaps it and joins the reader thread.
class Subprocess {
 public:
  struct Options {
    // Program and arguments. argv[0] is looked up on the child's PATH when it
    // has no '/'. Required, non-empty.
    std::vector<std::string> argv;
    // Variables added to, or overriding, the parent's environment.
    // Default: none.
    std::vector<std::pair<std::string, std::string>> env;
    // Optional. Called on the reader thread for every output line, without the
    // trailing newline, before the line becomes visible to WaitForLine().
    // Output without a newline is cut into 64 KiB lines.
    std::function<void(const std::string& line)> on_line;
    // Optional. Called once on the reader thread after the exit code has been
    // recorded (and after every on_line call), with that exit code.
    std::function<void(int exit_code)> on_exit;
    // How many of the most recent lines to keep for Output() and
    // WaitForLine(). Default 0: keep everything. Bound it for long-running
    // children whose output is consumed through on_line.
    size_t max_kept_lines = 0;
    // Run the child in a process group of its own, so that a terminal's
    // Ctrl-C reaches only the parent (which decides what the child gets).
    // Default false: the parent's group.
    bool new_process_group = false;
    // Give the child a pipe as stdin whose write end only this object holds
    // (CloseStdin() or destruction closes it), so that the child sees end of
    // file when the parent is done with it or dies. Default false: stdin is
    // inherited.
    bool pipe_stdin = false;
    // SIGKILL the child when the thread that started it dies
    // (PR_SET_PDEATHSIG): a launcher killed with kill -9 leaves no daemon
    // of its job running. Start from a thread that outlives the child.
    // Default false.
    bool die_with_parent = false;
  };

  // Starts the child: fork, then exec with stdin inherited, stdout and stderr
  // on the pipe, every other descriptor closed, the signal mask cleared and
  // signal dispositions reset to their defaults.
  // Returns InvalidArgument for an empty argv, NotFound when argv[0] is not on
  // PATH, and another error naming argv[0] when it cannot be run.
  static absl::StatusOr<std::unique_ptr<Subprocess>> Start(Options options);

  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;
  ~Subprocess();

  // Returns the first output line (already seen or future) that contains
  // `needle`. Returns DeadlineExceeded, with the last lines of output in the
  // message, if none appears within `timeout`, and FailedPrecondition if the
  // process exits without printing one.
  absl::StatusOr<std::string> WaitForLine(std::string_view needle,
                                          absl::Duration timeout);

  // Waits for the child to exit and returns its exit code: the status passed
  // to exit(), or 128 + the signal number when a signal killed it. Returns
  // DeadlineExceeded if it is still running after `timeout` (it is left
  // running). A zero timeout polls.
  absl::StatusOr<int> Wait(absl::Duration timeout);

  // True until the child's exit has been recorded.
  bool Running();

  // Sends `sig` to the child; does nothing once its exit has been recorded, so
  // it never signals a recycled pid.
  void Signal(int sig);

  // Closes the write end of the child's stdin pipe (Options::pipe_stdin),
  // so that the child reads end of file. Does nothing without the pipe or
  // when it is closed already.
  void CloseStdin();

  pid_t pid() const { return pid_; }

  // All kept output so far, one line per '\n'-terminated line.
  std::string Output() const;

 private:
  Subprocess(Options options, pid_t pid, int out_fd, int pid_fd, int wake_read,
             int wake_write, int in_fd);

  void ReadLoop();
  // Reads what the pipe holds now. Returns false at end of file.
  bool ReadAvailable();
  void EmitLine(std::string line);
  void ReapAndRecordExit();
  std::string LastLines(size_t n) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Options options_;
  const pid_t pid_;
  const int out_fd_;  // Read end of the output pipe; non-blocking.
  const int pid_fd_;  // pidfd of the child, or -1 if the kernel lacks pidfds.
  const int wake_read_;  // Destructor -> reader thread wake-up pipe.
  const int wake_write_;
  std::string partial_;  // Used only by the reader thread.
  std::thread reader_;

  mutable absl::Mutex mu_;
  absl::CondVar changed_;  // Signalled on every new line and on exit.
  std::deque<std::string> lines_ ABSL_GUARDED_BY(mu_);
  // Write end of the child's stdin pipe, or -1.
  int in_fd_ ABSL_GUARDED_BY(mu_) = -1;
  uint64_t dropped_lines_ ABSL_GUARDED_BY(mu_) = 0;
  std::optional<int> exit_code_ ABSL_GUARDED_BY(mu_);
};

// Parses "word key1=v1 key2=v2 ..." into {key1: v1, key2: v2}. Tokens are
// separated by spaces or tabs; tokens without '=' are ignored; a key that
// repeats keeps its last value.
std::map<std::string, std::string> ParseKeyValues(std::string_view line);

}  // namespace petrel

#endif  // PETREL_TOOLS_LAUNCH_SUBPROCESS_H_
