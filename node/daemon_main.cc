#include "node/daemon_main.h"

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "gflags/gflags.h"
#include "glog/logging.h"

#include "base/cli.h"
#include "base/flag_check.h"
#include "base/signal_watcher.h"
#include "base/status_macros.h"
#include "node/legacy_env.h"
#include "node/node_flags.h"
#include "security/connection_guard.h"

DEFINE_int32(stop_timeout_s, 120,
             "After SIGTERM/SIGINT, end the process at once if it has not "
             "exited (the job checkpoints first when it has a checkpoint "
             "directory) within this many seconds (1..86400). Default 120.");

namespace petrel {
namespace {

constexpr int kExitBadFlags = 2;

// Prints the daemon's one line for a failure; returns `code`.
int Report(const std::string& name, const absl::Status& status, int code) {
  std::fprintf(stderr, "%s: %s\n", name.c_str(),
               std::string(status.message()).c_str());
  return code;
}

// Step 3 of RunNodeDaemon's: the runtime, not started, with the node
// settings; Build (step 4) runs once signals are watched.
absl::StatusOr<std::unique_ptr<NodeRuntime>> Configure(pb::Role role,
                                                       NodeDaemon& daemon) {
  ClusterDefaults defaults;
  PETREL_RETURN_IF_ERROR(daemon.LoadConfig(&defaults));
  PETREL_ASSIGN_OR_RETURN(NodeSettings settings,
                          NodeSettingsFromFlags(role, defaults));
  PETREL_RETURN_IF_ERROR(daemon.CheckFlags(settings));
  if (daemon.tunes_allocator()) TuneAllocatorForLargeMessages();
  // Connections from strangers must not leave no descriptor for members.
  RaiseFileDescriptorLimit();
  return std::make_unique<NodeRuntime>(settings);
}

// The role DMLC_ROLE names when a daemon of it should run instead of the
// program's own; ROLE_UNSPECIFIED otherwise.
absl::StatusOr<pb::Role> OtherRole(const DaemonInfo& info) {
  if (!info.other_role) return pb::ROLE_UNSPECIFIED;
  PETREL_ASSIGN_OR_RETURN(LegacyEnv env, ReadLegacyEnv(&std::getenv));
  if (!env.role.has_value()) return pb::ROLE_UNSPECIFIED;
  const pb::Role role = *env.role == "scheduler" ? pb::ROLE_SCHEDULER
                        : *env.role == "server"  ? pb::ROLE_SERVER
                                                 : pb::ROLE_WORKER;
  return role == info.role ? pb::ROLE_UNSPECIFIED : role;
}

// Builds the daemon, then, unless a signal cancelled the start-up, runs
// and finishes it; sets `*code` to the exit code. `*built`, under
// `*phase_mu`, tells the signal handler that Build is over.
absl::Status BuildAndRun(NodeDaemon& daemon, NodeRuntime& runtime,
                         absl::Mutex* phase_mu, bool* built, int* code) {
  absl::Status status = daemon.Build(runtime);
  *code = status.ok() ? 0 : kExitBadFlags;
  {
    absl::MutexLock lock(phase_mu);
    *built = true;
    // Cancelled: Build stopped for it, or ended before it noticed.
    if (runtime.startup()->cancelled()) {
      status = absl::CancelledError(absl::StrCat(
          runtime.startup()->CancelledError().message(), "; stopping"));
      *code = 1;
    }
  }
  if (status.ok()) {
    status = daemon.Run(runtime);
    runtime.Stop();
    status = daemon.Finish(runtime, std::move(status));
    *code = ExitCodeFor(status);
  }
  return status;
}

}  // namespace

int RunNodeDaemon(int argc, char** argv, const DaemonInfo& info) {
  CliOptions cli;
  cli.name = info.name;
  cli.usage = info.usage;
  if (int code = ParseCommandLine(cli, &argc, &argv); code >= 0) return code;
  absl::StatusOr<pb::Role> other = OtherRole(info);
  if (!other.ok()) return Report(info.name, other.status(), kExitBadFlags);
  absl::StatusOr<std::unique_ptr<NodeDaemon>> daemon =
      std::unique_ptr<NodeDaemon>();
  if (*other != pb::ROLE_UNSPECIFIED) daemon = info.other_role(*other);
  if (daemon.ok() && *daemon != nullptr) {
    return RunParsedNodeDaemon(info.name, *other, *std::move(daemon));
  }
  if (daemon.ok()) daemon = info.make_daemon();
  if (!daemon.ok()) return Report(info.name, daemon.status(), kExitBadFlags);
  return RunParsedNodeDaemon(info.name, info.role, *std::move(daemon));
}

int RunParsedNodeDaemon(const std::string& name, pb::Role role,
                        std::unique_ptr<NodeDaemon> owned) {
  SignalWatcher signals;
  std::unique_ptr<NodeRuntime> runtime;
  // Declared after `runtime`, so destroyed before it.
  const std::unique_ptr<NodeDaemon> daemon_holder = std::move(owned);
  NodeDaemon& daemon = *daemon_holder;
  // A graceful stop (a checkpoint first) is bounded: a second signal or
  // --stop_timeout_s ends the process at once.
  absl::Notification exited;
  std::thread stop_timer;
  std::thread interrupter;
  signals.set_repeat_callback([&](const std::string& signal) {
    std::fprintf(stderr, "%s: second %s: stopping at once\n", name.c_str(),
                 signal.c_str());
    std::_Exit(1);
  });
  if (daemon.handles_usr1()) {
    signals.set_usr1_callback(
        [&](const std::string&) { daemon.OnUsr1(*runtime); });
  }
  if (absl::Status s =
          CheckFlagRange("stop_timeout_s", FLAGS_stop_timeout_s, 1, 86400);
      !s.ok()) {
    return Report(name, s, kExitBadFlags);
  }
  // Before Configure: Build may start threads, which inherit the mask.
  signals.Block();
  {
    absl::StatusOr<std::unique_ptr<NodeRuntime>> made = Configure(role, daemon);
    if (!made.ok()) return Report(name, made.status(), kExitBadFlags);
    runtime = *std::move(made);
  }
  // A signal during Build (a large dense table being filled) cancels it;
  // once Build is done it interrupts Run.
  absl::Mutex phase_mu;
  bool built = false;
  signals.Start([&](const std::string& signal) {
    stop_timer = std::thread([&exited, &name, signal] {
      if (exited.WaitForNotificationWithTimeout(
              absl::Seconds(FLAGS_stop_timeout_s))) {
        return;
      }
      std::fprintf(stderr, "%s: still running %ds after %s: stopping at once\n",
                   name.c_str(), FLAGS_stop_timeout_s, signal.c_str());
      std::_Exit(1);
    });
    // Start-up work in Run (a checkpoint load) stops too.
    runtime->startup()->Cancel(signal + " received");
    absl::MutexLock lock(&phase_mu);
    if (!built) return;
    // Messages queued for a peer that is gone (a worker killed a moment
    // ago, not yet declared dead) must not hold the exit for 2 s.
    runtime->postoffice()->van()->ShortenLingerAtStop();
    // On a thread of its own: Interrupt may wait for the scheduler, and
    // the watcher must stay free for a second signal.
    interrupter = std::thread([&daemon, &runtime, signal] {
      daemon.Interrupt(*runtime, signal + " received");
    });
  });
  int code = 0;
  absl::Status status = BuildAndRun(daemon, *runtime, &phase_mu, &built, &code);
  signals.Stop();
  exited.Notify();
  if (stop_timer.joinable()) stop_timer.join();
  if (interrupter.joinable()) interrupter.join();
  if (status.ok()) return 0;
  return Report(name, status, code);
}

}  // namespace petrel
