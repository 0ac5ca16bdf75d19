// petrel-scheduler: admits the nodes of a job, runs its barriers, watches
// heartbeats and ends the job when every worker has finished.
//
//   petrel-scheduler --port=9000 --num_servers=2 --num_workers=4
//
// Exit codes: 0 the job finished, 1 it failed (a node died, the cluster did
// not form, a signal), 2 bad flags.
#include <memory>
#include <string>

#include "gflags/gflags.h"
#include "glog/logging.h"

#include "scheduler/scheduler.h"
#include "van/daemon_main.h"

DEFINE_int32(heartbeat_timeout_s, 30,
             "Declare a node dead after this many seconds without a "
             "heartbeat; 0 disables. Default 30.");
DEFINE_int32(virtual_nodes, 32, "Key ranges per server (1..4096). Default 32.");
DEFINE_bool(
    fail_on_dead_node, true,
    "End the job as failed when a node is declared dead. Default true.");

namespace {

class SchedulerDaemon : public petrel::NodeDaemon {
 public:
  absl::Status CheckFlags(const petrel::NodeSettings& settings) override {
    if (FLAGS_virtual_nodes < 1 || FLAGS_virtual_nodes > 4096) {
      return absl::InvalidArgumentError("--virtual_nodes: must be in 1..4096");
    }
    options_.auth_token = settings.postoffice.auth_token;
    options_.join_timeout = settings.postoffice.join_timeout;
    options_.heartbeat_timeout = absl::Seconds(FLAGS_heartbeat_timeout_s);
    options_.virtual_nodes = FLAGS_virtual_nodes;
    options_.fail_on_dead_node = FLAGS_fail_on_dead_node;
    return absl::OkStatus();
  }
  absl::Status Build(petrel::NodeRuntime& runtime) override {
    scheduler_ =
        std::make_unique<petrel::Scheduler>(runtime.postoffice(), options_);
    return absl::OkStatus();
  }
  absl::Status Run(petrel::NodeRuntime& runtime) override {
    absl::Status status = runtime.Start();
    if (status.ok()) status = scheduler_->Run();
    if (status.ok()) LOG(INFO) << "job finished";
    return status;
  }
  void Interrupt(petrel::NodeRuntime&, const std::string& reason) override {
    scheduler_->Interrupt(reason);
  }

 private:
  petrel::SchedulerOptions options_;
  std::unique_ptr<petrel::Scheduler> scheduler_;
};

}  // namespace

int main(int argc, char** argv) {
  petrel::DaemonInfo info;
  info.name = "petrel-scheduler";
  info.role = petrel::pb::ROLE_SCHEDULER;
  info.usage =
      "runs the scheduler of a Petrel job.\n"
      "  petrel-scheduler --port=9000 --num_servers=S --num_workers=W";
  return petrel::RunNodeDaemon(argc, argv, info,
                               std::make_unique<SchedulerDaemon>());
}
