#include "van/daemon_main.h"

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "gflags/gflags.h"
#include "glog/logging.h"

#include "base/signal_watcher.h"
#include "van/node_flags.h"

DEFINE_int32(stop_timeout_s, 120,
             "After SIGTERM/SIGINT, end the process at once if it has not "
             "exited (the job checkpoints first when it has a checkpoint "
             "directory) within this many seconds. Default 120; >= 1.");

namespace petrel {
namespace {

constexpr int kExitBadFlags = 2;

// Prints the daemon's one line for a failure; returns `code`.
int Report(const DaemonInfo& info, const absl::Status& status, int code) {
  std::fprintf(stderr, "%s: %s\n", info.name,
               std::string(status.message()).c_str());
  return code;
}

// Steps 3 and 4 of RunNodeDaemon's; `runtime` is made here.
absl::Status Configure(const DaemonInfo& info, NodeDaemon& daemon,
                       std::unique_ptr<NodeRuntime>* runtime) {
  if (absl::Status s = daemon.LoadConfig(); !s.ok()) return s;
  absl::StatusOr<NodeSettings> settings = NodeSettingsFromFlags(info.role);
  if (!settings.ok()) return settings.status();
  if (absl::Status s = daemon.CheckFlags(*settings); !s.ok()) return s;
  if (info.tune_allocator) TuneAllocatorForLargeMessages();
  *runtime = std::make_unique<NodeRuntime>(*settings);
  return daemon.Build(**runtime);
}

}  // namespace

int RunNodeDaemon(int argc, char** argv, const DaemonInfo& info,
                  std::unique_ptr<NodeDaemon> owned) {
  gflags::SetUsageMessage(info.usage);
  if (int code = ParseNodeCommandLine(&argc, &argv); code >= 0) return code;
  FLAGS_logtostderr = true;
  google::InitGoogleLogging(argv[0]);
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
  signals.set_repeat_callback([&](const std::string& name) {
    std::fprintf(stderr, "%s: second %s: stopping at once\n", info.name,
                 name.c_str());
    std::_Exit(1);
  });
  if (info.watch_usr1) {
    signals.set_usr1_callback(
        [&](const std::string&) { daemon.OnUsr1(*runtime); });
  }
  // Before Configure: Build may start threads, which inherit the mask.
  signals.Block();
  if (absl::Status s = Configure(info, daemon, &runtime); !s.ok()) {
    return Report(info, s, kExitBadFlags);
  }
  signals.Start([&](const std::string& name) {
    stop_timer = std::thread([&exited, &info, name] {
      if (exited.WaitForNotificationWithTimeout(
              absl::Seconds(FLAGS_stop_timeout_s))) {
        return;
      }
      std::fprintf(stderr, "%s: still running %ds after %s: stopping at once\n",
                   info.name, FLAGS_stop_timeout_s, name.c_str());
      std::_Exit(1);
    });
    // Messages queued for a peer that is gone (a worker killed a moment
    // ago, not yet declared dead) must not hold the exit for 2 s.
    runtime->postoffice()->van()->ShortenLingerAtStop();
    // On a thread of its own: Interrupt may wait for the scheduler, and
    // the watcher must stay free for a second signal.
    interrupter = std::thread([&daemon, &runtime, name] {
      daemon.Interrupt(*runtime, name + " received");
    });
  });
  absl::Status status = daemon.Run(*runtime);
  runtime->Stop();
  status = daemon.Finish(*runtime, std::move(status));
  signals.Stop();
  exited.Notify();
  if (stop_timer.joinable()) stop_timer.join();
  if (interrupter.joinable()) interrupter.join();
  if (status.ok()) return 0;
  return Report(info, status, ExitCodeFor(status));
}

}  // namespace petrel
