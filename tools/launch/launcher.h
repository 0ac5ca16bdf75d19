// Launcher: runs a whole Petrel job on this machine for petrel-launch. It
// starts petrel-scheduler, reads its PETREL_LISTEN line for the port, starts
// the servers and the workers (the user's command, with DMLC_* and PETREL_*
// environment), prefixes and prints every child's output lines, and tears the
// job down when a process fails, a signal arrives or a deadline passes.

#ifndef PETREL_TOOLS_LAUNCH_LAUNCHER_H_
#define PETREL_TOOLS_LAUNCH_LAUNCHER_H_

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <signal.h>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

#include "tools/launch/hosts_file.h"
#include "tools/launch/remote_command.h"
#include "tools/launch/subprocess.h"

namespace petrel {

// The /metrics URL a daemon's PETREL_LISTEN / PETREL_READY line announces
// ("http://H:P/metrics"), or nullopt (another line, metrics off).
std::optional<std::string> MetricsUrl(std::string_view line);

// Whether `command` runs petrel-worker (which takes --metrics_port).
bool IsPetrelWorker(const std::string& command);

// Runs one job. Not thread-safe: call Run() from one thread, once. The
// printing callbacks are called with an internal mutex held, from the
// children's reader threads and from the Run() thread, so they never overlap.
class Launcher {
 public:
  struct Options {
    // Number of petrel-server processes. Default 1; range >= 1.
    int num_servers = 1;
    // Number of worker processes running `command`. Default 1; range >= 1.
    int num_workers = 1;
    // Directory holding petrel-scheduler and petrel-server. Required.
    std::string bin_dir;
    // Address the daemons advertise and workers connect to.
    // Default "127.0.0.1". Unused with `hosts`.
    std::string host = "127.0.0.1";
    // Hosts to run the processes on over ssh (petrel-launch --hosts), placed
    // by PlaceProcesses(). Each process advertises its host's address (and
    // binds it too when it is an IPv4 address), and its output lines are
    // prefixed "[server 1@HOST] ". Default empty: everything runs here.
    std::vector<HostEntry> hosts;
    // How to reach `hosts`.
    SshOptions ssh;
    // The worker command is petrel-worker, which takes node flags: on a
    // host given by an IPv4 address it gets --bind=ADDRESS as the daemons
    // do. Default false: workers get the DMLC_* environment only.
    bool worker_takes_node_flags = false;
    // Environment the remote processes get besides the DMLC_* and PETREL_*
    // variables the launcher sets (main passes its own PETREL_*, DMLC_* and
    // GLOG_* variables). Default none.
    std::vector<std::pair<std::string, std::string>> remote_env;
    // The worker command and its arguments. Required, non-empty.
    std::vector<std::string> command;
    // Extra arguments for every petrel-server (e.g. --config=FILE).
    std::vector<std::string> server_args;
    // Extra arguments for petrel-scheduler (e.g. --config=FILE).
    std::vector<std::string> scheduler_args;
    // Extra environment of each child, by its name ("scheduler", "server
    // 0", "worker 1"), e.g. its CURVE keys (ephemeral_keys.h). Called on
    // the launcher's thread. Default: none.
    std::function<std::vector<std::pair<std::string, std::string>>(
        const std::string& name)>
        child_env;
    // On the first SIGINT/SIGTERM, only the scheduler gets SIGTERM (the
    // children run in process groups of their own, so that a terminal's
    // Ctrl-C does not reach them directly): it
    // stops the job (after a checkpoint when the job has a checkpoint
    // directory) and every process exits by itself; a second signal, or
    // stop_timeout without every process gone, kills them all. Default
    // false: SIGTERM to every process at once.
    bool graceful_stop = false;
    // A worker killed by a signal (exit code > 128: kill -9, the OOM killer,
    // a crash) does not stop the job: the scheduler goes on without it
    // (petrel-scheduler --survive_worker_failures, docs/design.md "Worker
    // failures") and the job's exit code is the other processes'. A worker
    // that exits with an error code still stops the job. Default false.
    bool survive_worker_kills = false;
    // The same for a server (--replicas >= 2: its ranges fail over to a
    // replica, docs/failures.md "Replicated servers"; the scheduler fails
    // the job when a range lost every copy). Default false.
    bool survive_server_kills = false;
    // With survive_server_kills: once a server killed by a signal is
    // declared dead by the scheduler (its ranges failed over), start a
    // replacement petrel-server with the same arguments and rank, which
    // copies its ranges from their live replicas and restores the
    // replication factor (docs/failures.md "Replacement servers"). At most
    // max_server_replacements in a job. Default false.
    bool replace_dead_servers = false;
    int max_server_replacements = 10;
    // When the scheduler process is killed by a signal (kill -9, the OOM
    // killer, a crash) while workers still run, start petrel-scheduler
    // again with its arguments, --recover and the port it announced: the
    // nodes wait for it (--scheduler_grace_s), rejoin, and the job goes on
    // (docs/failures.md "The scheduler's death"). Not after the launcher
    // began stopping the job. At most max_scheduler_restarts in a job.
    // Default false: the scheduler's death ends the job.
    bool restart_killed_scheduler = false;
    int max_scheduler_restarts = 3;
    // How long a graceful stop may take. Default 120 s.
    absl::Duration stop_timeout = absl::Seconds(120);
    // Colon-separated directories to look command[0] up in before bin_dir
    // (main passes $PATH). Default empty: bin_dir only.
    std::string search_path;
    // Kill the job and fail if it runs longer. Default zero: no limit.
    absl::Duration job_timeout = absl::ZeroDuration();
    // How long the scheduler has to print PETREL_LISTEN. Default 30 s.
    absl::Duration listen_timeout = absl::Seconds(30);
    // How long the scheduler and servers have to exit by themselves once
    // every worker has exited 0. Default 60 s.
    absl::Duration drain_timeout = absl::Seconds(60);
    // Time between SIGTERM and SIGKILL when stopping processes. Default 5 s.
    absl::Duration grace_period = absl::Seconds(5);
    // Handle SIGINT and SIGTERM: Run() blocks them in the calling thread and
    // reads them from a signalfd. REQUIRES: no other thread of the process
    // leaves them unblocked. Default false.
    bool handle_signals = false;
    // Receives every child output line, already prefixed ("[worker 1] ...").
    // Default: write to stdout and flush.
    std::function<void(std::string_view line)> print_output;
    // Receives the launcher's own one-line reports ("worker 1 exited with
    // code 3; stopping the job"). Default: write to stderr.
    std::function<void(std::string_view line)> print_status;
  };

  // Returns InvalidArgument naming the first bad field.
  static absl::Status Validate(const Options& options);

  explicit Launcher(Options options);
  Launcher(const Launcher&) = delete;
  Launcher& operator=(const Launcher&) = delete;
  // Kills any children that are still running.
  ~Launcher();

  // Runs the job to the end and returns the launcher's exit code: 0 when
  // every process exited 0 (but the workers survive_worker_kills let go); 2
  // for invalid options, or when a process failed and one exited 2 (bad
  // data or config); 1 when one failed otherwise, a deadline passed or a
  // child could not be started; 128 + signal number when stopped by SIGINT
  // or SIGTERM.
  int Run();

 private:
  struct Child {
    std::string name;  // "scheduler", "server 0", "worker 1".
    bool is_worker = false;
    std::unique_ptr<Subprocess> proc;
    std::optional<int> exit_code;
    bool lost = false;    // killed by a signal, survive_{worker,server}_kills
    bool remote = false;  // runs over ssh: SIGTERM is closing its stdin
  };
  enum class WaitResult { kDone, kFailed, kSignal, kDeadline };

  absl::Status SetUpEvents();
  int RunJob();
  absl::Status StartScheduler();
  bool SchedulerAnnounced();
  // The port from the scheduler's PETREL_LISTEN line. REQUIRES:
  // SchedulerAnnounced() or the scheduler has exited.
  absl::StatusOr<int> AnnouncedPort();
  // Starts a child here, or over ssh on `remote` when it is not null, and
  // appends it to children_.
  absl::Status StartChild(std::string name, bool is_worker,
                          std::vector<std::string> argv,
                          std::vector<std::pair<std::string, std::string>> env,
                          const HostEntry* remote);
  // Starts a child. `role` is the name Options::child_env knows it by
  // ("server 1" for "server 1 replacement 2"); `is_scheduler`: its lines
  // are the scheduler's (OnSchedulerLine).
  absl::StatusOr<Child> NewChild(
      std::string name, const std::string& role, bool is_worker,
      bool is_scheduler, std::vector<std::string> argv,
      std::vector<std::pair<std::string, std::string>> env,
      const HostEntry* remote);
  // The host of the scheduler (index 0), server i or worker i, or null when
  // the job runs here.
  const HostEntry* SchedulerHost() const;
  const HostEntry* ServerHost(int i) const;
  const HostEntry* WorkerHost(int i) const;
  // The address a process on `remote` (null: here) advertises.
  const std::string& AddressOf(const HostEntry* remote) const;
  // SIGTERM to a local child; a remote one gets its stdin closed, and its
  // wrapper on the host sends the SIGTERM.
  void Terminate(Child& child);
  absl::Status StartServersAndWorkers(int port,
                                      const std::string& command_path);
  WaitResult WaitUntil(const std::function<bool()>& done, absl::Time deadline,
                       bool stop_on_failure);
  void WaitForEvent(absl::Time deadline);
  void CollectExits();
  // Why `child` exited with `code`, for messages: "killed by signal 9",
  // "bad flags, config or data", "ssh failed: ..."; "" when nothing to add.
  static std::string ExitReason(const Child& child, int code);
  bool AllExited(bool workers_only) const;
  bool AllSucceeded() const;
  // The exit code of a failed job: 2 when a process exited 2 (bad input:
  // flags, config, data), else 1.
  int FailedCode() const;
  int Finish(WaitResult result, absl::string_view deadline_message);
  int FailWith(const absl::Status& status);
  void TerminateAll();
  // The graceful stop of Options::graceful_stop.
  void StopGracefully();
  void OnSchedulerLine(const std::string& line);
  // Replacement servers (launcher_replacement.cc): notes a server rank the
  // scheduler declared dead, from its line; and starts a replacement for
  // every such rank whose process was lost.
  void NoteDeadServer(const std::string& line);
  void StartReplacements();
  // Options::restart_killed_scheduler: whether the scheduler child, which
  // exited with `code`, was restarted (children_[0] is then the new one).
  bool RestartScheduler(int code);
  void NotifyEvent();
  void PrintOutput(const std::string& name, const std::string& line);
  void PrintStatus(absl::string_view message);

  const Options options_;
  Placement placement_;  // Where each process runs, with options_.hosts.
  absl::Time job_deadline_ = absl::InfiniteFuture();
  int event_fd_ = -1;   // Written by on_exit / on_line callbacks.
  int signal_fd_ = -1;  // signalfd for SIGINT/SIGTERM, or -1.
  sigset_t old_mask_;   // Restored by the destructor if signals_blocked_.
  bool signals_blocked_ = false;
  // State below is used only by the Run() thread.
  std::vector<Child> children_;
  std::optional<size_t> failed_;  // First child that exited non-zero.
  int pending_signal_ = 0;        // First SIGINT/SIGTERM received.
  int signals_received_ = 0;

  // Serializes printing and guards the scheduler's announced port.
  absl::Mutex mu_;
  int listen_port_ ABSL_GUARDED_BY(mu_) = 0;
  std::string bad_listen_line_ ABSL_GUARDED_BY(mu_);
  // Server ranks the scheduler declared dead, not yet replaced.
  std::vector<int> dead_servers_ ABSL_GUARDED_BY(mu_);
  // Run() thread: each server rank's arguments, host and current child
  // (index into children_); replacements started so far.
  struct ServerStart {
    std::vector<std::string> argv;
    const HostEntry* remote = nullptr;
    size_t child = 0;
  };
  std::vector<ServerStart> server_starts_;
  int replacements_ = 0;
  // Run() thread: the scheduler's arguments; restarts so far; whether the
  // launcher began stopping the job (its SIGTERMs are not deaths to undo).
  std::vector<std::string> scheduler_argv_;
  int scheduler_restarts_ = 0;
  bool stopping_ = false;
};

}  // namespace petrel

#endif  // PETREL_TOOLS_LAUNCH_LAUNCHER_H_
