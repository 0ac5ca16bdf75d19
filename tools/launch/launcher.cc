#include "tools/launch/launcher.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

#include "base/out_of_job.h"
#include "tools/launch/executable_path.h"

namespace petrel {
namespace {

constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;
constexpr char kListenPrefix[] = "PETREL_LISTEN ";
// Output lines each child keeps for diagnostics; everything is printed.
constexpr size_t kKeptLines = 100;

// The value of `key=` in a PETREL_LISTEN / PETREL_READY line, or "".
std::string Field(std::string_view line, std::string_view key) {
  const std::string needle = " " + std::string(key) + "=";
  const size_t at = line.find(needle);
  if (at == std::string_view::npos) return "";
  const size_t begin = at + needle.size();
  const size_t end = line.find(' ', begin);
  return std::string(
      line.substr(begin, end == std::string_view::npos ? end : end - begin));
}

void WriteLine(std::FILE* stream, std::string_view line) {
  std::fwrite(line.data(), 1, line.size(), stream);
  std::fputc('\n', stream);
  std::fflush(stream);
}

Launcher::Options WithDefaultSinks(Launcher::Options options) {
  if (!options.print_output) {
    options.print_output = [](std::string_view line) {
      WriteLine(stdout, line);
    };
  }
  if (!options.print_status) {
    options.print_status = [](std::string_view line) {
      WriteLine(stderr, line);
    };
  }
  return options;
}

bool IsIpv4Address(const std::string& host) {
  in_addr address;
  return inet_pton(AF_INET, host.c_str(), &address) == 1;
}

}  // namespace

absl::Status Launcher::Validate(const Options& options) {
  if (options.num_servers < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "num_servers must be at least 1, got ", options.num_servers));
  }
  if (options.num_workers < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "num_workers must be at least 1, got ", options.num_workers));
  }
  if (options.command.empty() || options.command[0].empty()) {
    return absl::InvalidArgumentError(
        "no worker command given (put it after '--')");
  }
  if (options.bin_dir.empty()) {
    return absl::InvalidArgumentError("bin_dir is empty");
  }
  if (options.host.empty()) {
    return absl::InvalidArgumentError("host is empty");
  }
  if (options.job_timeout < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("timeout must not be negative");
  }
  if (options.max_scheduler_restarts < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_scheduler_restarts must not be negative, got ",
                     options.max_scheduler_restarts));
  }
  if (options.max_server_replacements < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_server_replacements must not be negative, got ",
                     options.max_server_replacements));
  }
  if (!options.hosts.empty()) {
    absl::StatusOr<Placement> placement =
        PlaceProcesses(options.hosts, options.num_servers, options.num_workers);
    if (!placement.ok()) return placement.status();
  }
  return absl::OkStatus();
}

Launcher::Launcher(Options options)
    : options_(WithDefaultSinks(std::move(options))) {
  sigemptyset(&old_mask_);
}

Launcher::~Launcher() {
  // Kills and reaps children and joins their reader threads before the
  // descriptors their callbacks use are closed.
  children_.clear();
  if (event_fd_ >= 0) close(event_fd_);
  if (signal_fd_ >= 0) {
    // Consume signals still pending, so that unblocking them does not kill
    // the process after Run() has decided its exit code.
    signalfd_siginfo info;
    while (read(signal_fd_, &info, sizeof(info)) == sizeof(info)) {
    }
    close(signal_fd_);
  }
  if (signals_blocked_) pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
}

int Launcher::Run() {
  if (absl::Status s = Validate(options_); !s.ok()) {
    PrintStatus(s.message());
    return kExitUsage;
  }
  if (!options_.hosts.empty()) {
    placement_ = *PlaceProcesses(options_.hosts, options_.num_servers,
                                 options_.num_workers);
  }
  if (absl::Status s = SetUpEvents(); !s.ok()) return FailWith(s);
  int exit_code = RunJob();
  children_.clear();
  return exit_code;
}

absl::Status Launcher::SetUpEvents() {
  event_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (event_fd_ < 0) return absl::ErrnoToStatus(errno, "eventfd");
  if (!options_.handle_signals) return absl::OkStatus();
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  // Blocked before any child or reader thread exists, so every thread
  // inherits the mask and the signals only ever reach the signalfd.
  pthread_sigmask(SIG_BLOCK, &set, &old_mask_);
  signals_blocked_ = true;
  signal_fd_ = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
  if (signal_fd_ < 0) return absl::ErrnoToStatus(errno, "signalfd");
  return absl::OkStatus();
}

int Launcher::RunJob() {
  if (options_.job_timeout > absl::ZeroDuration()) {
    job_deadline_ = absl::Now() + options_.job_timeout;
  }
  absl::StatusOr<std::string> command = ResolveCommand(
      options_.command[0], options_.search_path, options_.bin_dir);
  if (!command.ok()) return FailWith(command.status());
  if (absl::Status s = StartScheduler(); !s.ok()) return FailWith(s);
  WaitResult result = WaitUntil(
      [this] { return SchedulerAnnounced() || !children_[0].proc->Running(); },
      std::min(absl::Now() + options_.listen_timeout, job_deadline_),
      /*stop_on_failure=*/true);
  if (result != WaitResult::kDone) {
    return Finish(
        result, absl::StrCat("scheduler printed no PETREL_LISTEN line within ",
                             absl::FormatDuration(options_.listen_timeout)));
  }
  absl::StatusOr<int> port = AnnouncedPort();
  if (!port.ok()) return FailWith(port.status());
  if (absl::Status s = StartServersAndWorkers(*port, *command); !s.ok()) {
    return FailWith(s);
  }
  result = WaitUntil([this] { return AllExited(true); }, job_deadline_,
                     /*stop_on_failure=*/true);
  if (result != WaitResult::kDone) return Finish(result, "");
  result =
      WaitUntil([this] { return AllExited(false); },
                std::min(absl::Now() + options_.drain_timeout, job_deadline_),
                /*stop_on_failure=*/true);
  if (result == WaitResult::kDeadline && absl::Now() < job_deadline_) {
    // The workers succeeded; the job still fails unless the scheduler and
    // servers exit 0 on SIGTERM.
    PrintStatus(absl::StrCat("scheduler or servers still running ",
                             absl::FormatDuration(options_.drain_timeout),
                             " after all workers finished; stopping them"));
    TerminateAll();
    return AllSucceeded() ? 0 : kExitFailed;
  }
  return Finish(result, "");
}

absl::Status Launcher::StartScheduler() {
  const HostEntry* remote = SchedulerHost();
  std::vector<std::string> argv = {
      options_.bin_dir + "/petrel-scheduler", "--port=0",
      absl::StrCat("--num_servers=", options_.num_servers),
      absl::StrCat("--num_workers=", options_.num_workers),
      "--advertise_host=" + AddressOf(remote)};
  if (remote != nullptr && IsIpv4Address(remote->address)) {
    argv.push_back("--bind=" + remote->address);
  }
  argv.insert(argv.end(), options_.scheduler_args.begin(),
              options_.scheduler_args.end());
  scheduler_argv_ = argv;
  return StartChild("scheduler", false, std::move(argv), {}, remote);
}

const HostEntry* Launcher::SchedulerHost() const {
  if (options_.hosts.empty()) return nullptr;
  return &options_.hosts[placement_.scheduler];
}

const HostEntry* Launcher::ServerHost(int i) const {
  if (options_.hosts.empty()) return nullptr;
  return &options_.hosts[placement_.servers[static_cast<size_t>(i)]];
}

const HostEntry* Launcher::WorkerHost(int i) const {
  if (options_.hosts.empty()) return nullptr;
  return &options_.hosts[placement_.workers[static_cast<size_t>(i)]];
}

const std::string& Launcher::AddressOf(const HostEntry* remote) const {
  return remote != nullptr ? remote->address : options_.host;
}

void Launcher::Terminate(Child& child) {
  if (child.remote) {
    child.proc->CloseStdin();
  } else {
    child.proc->Signal(SIGTERM);
  }
}

void Launcher::StopGracefully() {
  PrintStatus(absl::StrCat(
      "received ", pending_signal_ == SIGINT ? "SIGINT" : "SIGTERM",
      "; asking the scheduler to stop the job (a second signal kills it)"));
  stopping_ = true;
  Terminate(children_[0]);
  const int signals_before = signals_received_;
  WaitResult waited = WaitUntil(
      [&] { return AllExited(false) || signals_received_ > signals_before; },
      absl::Now() + options_.stop_timeout, /*stop_on_failure=*/false);
  if (AllExited(false)) return;
  PrintStatus(waited == WaitResult::kDeadline
                  ? absl::StrCat("the job did not stop within ",
                                 absl::FormatDuration(options_.stop_timeout),
                                 "; killing it")
                  : "second signal; killing the job");
  for (Child& child : children_) {
    if (!child.exit_code.has_value()) child.proc->Signal(SIGKILL);
  }
  for (Child& child : children_) {
    if (!child.exit_code.has_value()) {
      child.proc->Wait(options_.grace_period).IgnoreError();
    }
  }
  CollectExits();
}

bool Launcher::SchedulerAnnounced() {
  absl::MutexLock lock(&mu_);
  return listen_port_ != 0 || !bad_listen_line_.empty();
}

absl::StatusOr<int> Launcher::AnnouncedPort() {
  absl::MutexLock lock(&mu_);
  if (!bad_listen_line_.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("scheduler announced no valid port: ", bad_listen_line_));
  }
  if (listen_port_ == 0) {
    return absl::FailedPreconditionError(
        "scheduler exited with code 0 before printing PETREL_LISTEN");
  }
  return listen_port_;
}

absl::Status Launcher::StartServersAndWorkers(int port,
                                              const std::string& command_path) {
  const std::string& scheduler_host = AddressOf(SchedulerHost());
  const std::string scheduler = absl::StrCat(scheduler_host, ":", port);
  for (int i = 0; i < options_.num_servers; ++i) {
    const HostEntry* remote = ServerHost(i);
    std::vector<std::string> argv = {
        options_.bin_dir + "/petrel-server",
        "--scheduler=" + scheduler,
        "--port=0",
        "--advertise_host=" + AddressOf(remote),
        absl::StrCat("--rank=", i),
        absl::StrCat("--num_servers=", options_.num_servers),
        absl::StrCat("--num_workers=", options_.num_workers)};
    if (remote != nullptr && IsIpv4Address(remote->address)) {
      argv.push_back("--bind=" + remote->address);
    }
    argv.insert(argv.end(), options_.server_args.begin(),
                options_.server_args.end());
    server_starts_.push_back({argv, remote, children_.size()});
    absl::Status s =
        StartChild(absl::StrCat("server ", i), false, argv, {}, remote);
    if (!s.ok()) return s;
  }
  for (int i = 0; i < options_.num_workers; ++i) {
    const HostEntry* remote = WorkerHost(i);
    std::vector<std::string> argv = options_.command;
    argv[0] = command_path;
    if (options_.worker_takes_node_flags && remote != nullptr &&
        IsIpv4Address(remote->address)) {
      argv.push_back("--bind=" + remote->address);
    }
    absl::Status s =
        StartChild(absl::StrCat("worker ", i), true, std::move(argv),
                   {{"DMLC_ROLE", "worker"},
                    {"DMLC_PS_ROOT_URI", scheduler_host},
                    {"DMLC_PS_ROOT_PORT", absl::StrCat(port)},
                    {"DMLC_NUM_SERVER", absl::StrCat(options_.num_servers)},
                    {"DMLC_NUM_WORKER", absl::StrCat(options_.num_workers)},
                    {"DMLC_NODE_HOST", AddressOf(remote)},
                    {"PETREL_RANK", absl::StrCat(i)},
                    {"PETREL_SCHEDULER", scheduler}},
                   remote);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status Launcher::StartChild(
    std::string name, bool is_worker, std::vector<std::string> argv,
    std::vector<std::pair<std::string, std::string>> env,
    const HostEntry* remote) {
  const std::string role = name;
  const bool is_scheduler = children_.empty();
  absl::StatusOr<Child> child =
      NewChild(std::move(name), role, is_worker, is_scheduler, std::move(argv),
               std::move(env), remote);
  if (!child.ok()) return child.status();
  children_.push_back(*std::move(child));
  return absl::OkStatus();
}

absl::StatusOr<Launcher::Child> Launcher::NewChild(
    std::string name, const std::string& role, bool is_worker,
    bool is_scheduler, std::vector<std::string> argv,
    std::vector<std::pair<std::string, std::string>> env,
    const HostEntry* remote) {
  Subprocess::Options opts;
  if (options_.child_env) {
    for (auto& kv : options_.child_env(role)) env.push_back(std::move(kv));
  }
  if (remote == nullptr) {
    opts.argv = std::move(argv);
    opts.env = std::move(env);
  } else {
    absl::StrAppend(&name, "@", remote->target);
    // The variables the launcher sets win over forwarded ones.
    std::vector<std::pair<std::string, std::string>> remote_env;
    for (const auto& kv : options_.remote_env) {
      if (std::none_of(env.begin(), env.end(),
                       [&](const auto& e) { return e.first == kv.first; })) {
        remote_env.push_back(kv);
      }
    }
    remote_env.insert(remote_env.end(), env.begin(), env.end());
    opts.argv = SshArgv(options_.ssh, remote->target, argv, remote_env);
    opts.pipe_stdin = true;
  }
  // A terminal's Ctrl-C reaches the launcher alone, which forwards it once
  // to the scheduler (a second signal would stop a daemon at once). ssh
  // children never get it from the terminal: the launcher stops them.
  opts.new_process_group = options_.graceful_stop || remote != nullptr;
  // Killed with kill -9, the launcher takes its job along: no daemon is
  // left to go on writing the job's checkpoints beside a restarted job.
  // (Children start from the Run() thread only.)
  opts.die_with_parent = true;
  opts.max_kept_lines = kKeptLines;
  opts.on_line = [this, name, is_scheduler](const std::string& line) {
    PrintOutput(name, line);
    if (is_scheduler) OnSchedulerLine(line);
    if (std::optional<std::string> url = MetricsUrl(line); url.has_value()) {
      PrintStatus(absl::StrCat(name, " metrics at ", *url));
    }
  };
  opts.on_exit = [this](int) { NotifyEvent(); };
  absl::StatusOr<std::unique_ptr<Subprocess>> proc =
      Subprocess::Start(std::move(opts));
  if (!proc.ok()) {
    return absl::Status(
        proc.status().code(),
        absl::StrCat("starting ", name, ": ", proc.status().message()));
  }
  return Child{std::move(name), is_worker,        *std::move(proc), {},
               false,           remote != nullptr};
}

Launcher::WaitResult Launcher::WaitUntil(const std::function<bool()>& done,
                                         absl::Time deadline,
                                         bool stop_on_failure) {
  while (true) {
    CollectExits();
    if (options_.replace_dead_servers) StartReplacements();
    if (stop_on_failure && failed_.has_value()) return WaitResult::kFailed;
    if (stop_on_failure && pending_signal_ != 0) return WaitResult::kSignal;
    if (done()) return WaitResult::kDone;
    if (absl::Now() >= deadline) return WaitResult::kDeadline;
    WaitForEvent(deadline);
  }
}

void Launcher::WaitForEvent(absl::Time deadline) {
  pollfd fds[2] = {{event_fd_, POLLIN, 0}, {signal_fd_, POLLIN, 0}};
  const nfds_t n = signal_fd_ >= 0 ? 2 : 1;
  int timeout_ms = -1;
  if (deadline != absl::InfiniteFuture()) {
    absl::Duration left =
        absl::Ceil(deadline - absl::Now(), absl::Milliseconds(1));
    timeout_ms = static_cast<int>(
        std::clamp<int64_t>(absl::ToInt64Milliseconds(left), 0, INT_MAX));
  }
  if (poll(fds, n, timeout_ms) <= 0) return;  // Timeout or EINTR.
  uint64_t count = 0;
  if (fds[0].revents != 0) {
    ssize_t ignored = read(event_fd_, &count, sizeof(count));
    (void)ignored;
  }
  signalfd_siginfo info;
  while (n == 2 && read(signal_fd_, &info, sizeof(info)) == sizeof(info)) {
    if (pending_signal_ == 0) {
      pending_signal_ = static_cast<int>(info.ssi_signo);
    }
    ++signals_received_;
  }
}

void Launcher::CollectExits() {
  for (size_t i = 0; i < children_.size(); ++i) {
    Child& child = children_[i];
    if (child.exit_code.has_value()) continue;
    absl::StatusOr<int> code = child.proc->Wait(absl::ZeroDuration());
    if (!code.ok()) continue;
    child.exit_code = *code;
    // ssh's own failure (255) is not a kill: an unreachable host fails the
    // job at once.
    const bool killed = *code > 128 && !(child.remote && *code == 255);
    // Declared dead while it hung (SIGSTOP, a stall) and told so when it
    // came back: it left, as if killed; the job went on without it.
    const bool left = *code == kExitOutOfJob;
    const bool survives = child.is_worker
                              ? options_.survive_worker_kills
                              : options_.survive_server_kills &&
                                    absl::StartsWith(child.name, "server");
    if (i == 0 && killed && RestartScheduler(*code)) continue;
    if ((killed || left) && survives && !failed_.has_value()) {
      child.lost = true;
      PrintStatus(absl::StrCat(child.name, " was ", ExitReason(child, *code),
                               "; the job goes on without it"));
      continue;
    }
    if (*code != 0 && !failed_.has_value()) failed_ = i;
  }
}

std::string Launcher::ExitReason(const Child& child, int code) {
  // ssh exits 255 for its own failures; the remote process's code otherwise.
  if (child.remote && code == 255) {
    return "ssh failed: host unreachable, connection lost or login refused";
  }
  if (code > 128) return absl::StrCat("killed by signal ", code - 128);
  if (code == kExitOutOfJob) {
    return "declared dead while it did not answer, and out of the job";
  }
  if (code == kExitUsage) return "bad flags, config or data";
  return "";
}

bool Launcher::AllExited(bool workers_only) const {
  return std::all_of(children_.begin(), children_.end(), [&](const Child& c) {
    return c.exit_code.has_value() || (workers_only && !c.is_worker);
  });
}

bool Launcher::AllSucceeded() const {
  return std::all_of(children_.begin(), children_.end(),
                     [](const Child& c) { return c.exit_code == 0 || c.lost; });
}

int Launcher::FailedCode() const {
  const bool bad_input =
      std::any_of(children_.begin(), children_.end(),
                  [](const Child& c) { return c.exit_code == kExitUsage; });
  return bad_input ? kExitUsage : kExitFailed;
}

int Launcher::Finish(WaitResult result, absl::string_view deadline_message) {
  switch (result) {
    case WaitResult::kDone:
      return AllSucceeded() ? 0 : FailedCode();
    case WaitResult::kFailed: {
      const Child& child = children_[*failed_];
      int code = *child.exit_code;
      const std::string reason = ExitReason(child, code);
      PrintStatus(absl::StrCat(
          child.name, " exited with code ", code, reason.empty() ? "" : " (",
          reason, reason.empty() ? "" : ")", "; stopping the job"));
      TerminateAll();
      // Bad flags, config or data stay exit 2 for whoever runs the launcher,
      // also when another process saw the job fail and exited first.
      const bool usage =
          std::any_of(children_.begin(), children_.end(),
                      [](const Child& c) { return c.exit_code == kExitUsage; });
      return usage ? kExitUsage : kExitFailed;
    }
    case WaitResult::kSignal:
      if (options_.graceful_stop && !children_.empty() &&
          !children_[0].exit_code.has_value()) {
        StopGracefully();
        return 128 + pending_signal_;
      }
      PrintStatus(absl::StrCat("received ",
                               pending_signal_ == SIGINT ? "SIGINT" : "SIGTERM",
                               "; stopping the job"));
      TerminateAll();
      return 128 + pending_signal_;
    case WaitResult::kDeadline:
      if (absl::Now() >= job_deadline_ || deadline_message.empty()) {
        PrintStatus(absl::StrCat("job still running after the ",
                                 absl::FormatDuration(options_.job_timeout),
                                 " timeout; stopping it"));
      } else {
        PrintStatus(deadline_message);
      }
      break;
  }
  TerminateAll();
  return result == WaitResult::kFailed ? FailedCode() : kExitFailed;
}

int Launcher::FailWith(const absl::Status& status) {
  PrintStatus(status.message());
  TerminateAll();
  return kExitFailed;
}

void Launcher::TerminateAll() {
  stopping_ = true;
  for (Child& child : children_) Terminate(child);
  // A second SIGINT/SIGTERM skips the rest of the grace period.
  const int signals_before = signals_received_;
  WaitUntil(
      [&] { return AllExited(false) || signals_received_ > signals_before; },
      absl::Now() + options_.grace_period, /*stop_on_failure=*/false);
  for (Child& child : children_) {
    if (child.exit_code.has_value()) continue;
    PrintStatus(absl::StrCat(child.name, " still running after SIGTERM; ",
                             "sending SIGKILL"));
    child.proc->Signal(SIGKILL);
    // SIGKILL cannot be caught; the bound only guards against a child stuck
    // in uninterruptible sleep.
    child.proc->Wait(options_.grace_period).IgnoreError();
  }
  CollectExits();
}

void Launcher::OnSchedulerLine(const std::string& line) {
  if (options_.replace_dead_servers) NoteDeadServer(line);
  if (!absl::StartsWith(line, kListenPrefix)) return;
  std::map<std::string, std::string> values = ParseKeyValues(line);
  int port = 0;
  bool valid =
      absl::SimpleAtoi(values["port"], &port) && port > 0 && port <= 65535;
  {
    absl::MutexLock lock(&mu_);
    if (listen_port_ != 0 || !bad_listen_line_.empty()) return;
    if (valid) {
      listen_port_ = port;
    } else {
      bad_listen_line_ = line;
    }
  }
  NotifyEvent();
}

void Launcher::NotifyEvent() {
  uint64_t one = 1;
  ssize_t ignored = write(event_fd_, &one, sizeof(one));
  (void)ignored;
}

void Launcher::PrintOutput(const std::string& name, const std::string& line) {
  std::string prefixed = absl::StrCat("[", name, "] ", line);
  absl::MutexLock lock(&mu_);
  options_.print_output(prefixed);
}

void Launcher::PrintStatus(absl::string_view message) {
  std::string line = absl::StrCat("petrel-launch: ", message);
  absl::MutexLock lock(&mu_);
  options_.print_status(line);
}

std::optional<std::string> MetricsUrl(std::string_view line) {
  if (line.rfind("PETREL_LISTEN ", 0) != 0 &&
      line.rfind("PETREL_READY ", 0) != 0) {
    return std::nullopt;
  }
  const std::string port = Field(line, "metrics_port");
  const std::string host = Field(line, "metrics_host");
  if (port.empty() || port[0] == '-' || host.empty()) return std::nullopt;
  return absl::StrCat("http://", host, ":", port, "/metrics");
}

bool IsPetrelWorker(const std::string& command) {
  const std::string suffix = "/petrel-worker";
  return command == "petrel-worker" ||
         (command.size() > suffix.size() &&
          command.compare(command.size() - suffix.size(), suffix.size(),
                          suffix) == 0);
}

}  // namespace petrel
