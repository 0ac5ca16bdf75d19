// petrel-server: holds a share of the job's key-value parameters and
// answers pushes and pulls until the scheduler ends the job.
//
//   petrel-server --scheduler=HOST:PORT [--port=0] [--store_mode=sum]
//
// Exit codes: 0 the job finished, 1 runtime failure, 2 bad flags.
#include <cstdio>

#include "gflags/gflags.h"
#include "glog/logging.h"
#include "server/kv_server.h"
#include "van/node_flags.h"
#include "van/signal_watcher.h"

DEFINE_string(store_mode, "sum",
              "What a push does to stored values: sum (add) or assign "
              "(overwrite). Default sum.");

int main(int argc, char** argv) {
  gflags::SetUsageMessage(
      "serves a share of a Petrel job's parameters.\n"
      "  petrel-server --scheduler=HOST:PORT [--port=0]");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  FLAGS_logtostderr = true;
  google::InitGoogleLogging(argv[0]);
  petrel::SignalWatcher signals;
  absl::StatusOr<petrel::NodeSettings> settings =
      petrel::NodeSettingsFromFlags(petrel::pb::ROLE_SERVER);
  if (settings.ok() && FLAGS_store_mode != "sum" && FLAGS_store_mode != "assign") {
    settings = absl::InvalidArgumentError("--store_mode: must be sum or assign");
  }
  if (!settings.ok()) {
    std::fprintf(stderr, "petrel-server: %s\n",
                 std::string(settings.status().message()).c_str());
    return 2;
  }
  petrel::TuneAllocatorForLargeMessages();
  petrel::NodeRuntime runtime(*settings);
  signals.Start([&](const std::string& name) {
    runtime.postoffice()->Interrupt(name + " received");
  });
  using Handler = petrel::KVStoreHandler<float>;
  Handler handler(FLAGS_store_mode == "sum" ? Handler::Mode::kSum
                                            : Handler::Mode::kAssign);
  petrel::KVServer<float> server(/*app_id=*/0, runtime.postoffice());
  server.set_request_handler(std::ref(handler));
  absl::Status status = server.Start();
  if (status.ok()) status = runtime.Start();
  if (status.ok()) {
    status = runtime.postoffice()->WaitForTerminate(absl::InfiniteDuration());
  }
  if (status.ok()) {
    LOG(INFO) << "server " << runtime.postoffice()->my_rank() << " finished";
  } else {
    std::fprintf(stderr, "petrel-server: %s\n",
                 std::string(status.message()).c_str());
  }
  runtime.Stop();
  signals.Stop();
  return status.ok() ? 0 : 1;
}
