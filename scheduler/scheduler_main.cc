// petrel-scheduler: admits the nodes of a job, runs its barriers, watches
// heartbeats and ends the job when every worker has finished.
//
//   petrel-scheduler --port=9000 --num_servers=2 --num_workers=4
//
// Exit codes: 0 the job finished, 1 it failed (a node died, the cluster did
// not form, a signal), 2 bad flags.
#include <cstdio>

#include "gflags/gflags.h"
#include "glog/logging.h"

#include "base/signal_watcher.h"
#include "scheduler/scheduler.h"
#include "van/node_flags.h"

DEFINE_int32(heartbeat_timeout_s, 30,
             "Declare a node dead after this many seconds without a "
             "heartbeat; 0 disables. Default 30.");
DEFINE_int32(virtual_nodes, 32, "Key ranges per server (1..4096). Default 32.");
DEFINE_bool(
    fail_on_dead_node, true,
    "End the job as failed when a node is declared dead. Default true.");

int main(int argc, char** argv) {
  gflags::SetUsageMessage(
      "runs the scheduler of a Petrel job.\n"
      "  petrel-scheduler --port=9000 --num_servers=S --num_workers=W");
  if (int code = petrel::ParseNodeCommandLine(&argc, &argv); code >= 0) {
    return code;
  }
  FLAGS_logtostderr = true;
  google::InitGoogleLogging(argv[0]);
  petrel::SignalWatcher signals;
  absl::StatusOr<petrel::NodeSettings> settings =
      petrel::NodeSettingsFromFlags(petrel::pb::ROLE_SCHEDULER);
  if (settings.ok() &&
      (FLAGS_virtual_nodes < 1 || FLAGS_virtual_nodes > 4096)) {
    settings =
        absl::InvalidArgumentError("--virtual_nodes: must be in 1..4096");
  }
  if (!settings.ok()) {
    std::fprintf(stderr, "petrel-scheduler: %s\n",
                 std::string(settings.status().message()).c_str());
    return 2;
  }
  petrel::SchedulerOptions options;
  options.auth_token = settings->postoffice.auth_token;
  options.join_timeout = settings->postoffice.join_timeout;
  options.heartbeat_timeout = absl::Seconds(FLAGS_heartbeat_timeout_s);
  options.virtual_nodes = FLAGS_virtual_nodes;
  options.fail_on_dead_node = FLAGS_fail_on_dead_node;

  petrel::NodeRuntime runtime(*settings);
  petrel::Scheduler scheduler(runtime.postoffice(), options);
  signals.Start([&](const std::string& name) {
    scheduler.Interrupt(name + " received");
  });
  absl::Status status = runtime.Start();
  if (status.ok()) status = scheduler.Run();
  if (status.ok()) {
    LOG(INFO) << "job finished";
  } else {
    std::fprintf(stderr, "petrel-scheduler: %s\n",
                 std::string(status.message()).c_str());
  }
  runtime.Stop();
  signals.Stop();
  return status.ok() ? 0 : petrel::ExitCodeFor(status) == 2 ? 2 : 1;
}
