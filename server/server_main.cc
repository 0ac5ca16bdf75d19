// petrel-server: holds a share of the job's key-value parameters and
// answers pushes and pulls until the scheduler ends the job.
//
//   petrel-server --scheduler=HOST:PORT [--port=0] [--store_mode=sum]
//   petrel-server --scheduler=HOST:PORT --config=job.textproto
//
// Without --config it is a plain key-value store (KVStoreHandler); with it,
// it serves the job's tables with their optimizers and bounded delay
// (TableServer). The job's num_servers/num_workers are the defaults of
// --num_servers/--num_workers (DMLC_* variables and the flags win).
//
// Exit codes: 0 the job finished, 1 runtime failure, 2 bad flags.
#include <cstdio>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gflags/gflags.h"
#include "glog/logging.h"

#include "base/config_file.h"
#include "base/signal_watcher.h"
#include "kv/kv_server.h"
#include "server/table_server.h"
#include "van/node_flags.h"

DEFINE_string(store_mode, "sum",
              "What a push does to stored values: sum (add) or assign "
              "(overwrite). Default sum. Ignored with --config.");
DEFINE_string(config, "",
              "Job config file (protobuf text format, proto/job.proto); "
              "when set, the server holds the job's tables. Default empty: "
              "a plain key-value store.");
DEFINE_int32(server_threads, 0,
             "Threads applying large requests to the tables (--config "
             "only); 0 = one per core. Default 0.");

namespace {

// Reads --config (when given) and makes its cluster sizes the defaults of
// the node flags. Returns false after printing the error.
bool LoadJob(petrel::pb::JobConfig* job) {
  if (FLAGS_config.empty()) return true;
  absl::Status s = petrel::ParseTextProtoFile(FLAGS_config, job);
  if (!s.ok()) {
    std::fprintf(stderr, "petrel-server: %s\n",
                 std::string(s.message()).c_str());
    return false;
  }
  if (job->num_servers() > 0) {
    gflags::SetCommandLineOptionWithMode(
        "num_servers", std::to_string(job->num_servers()).c_str(),
        gflags::SET_FLAGS_DEFAULT);
  }
  if (job->num_workers() > 0) {
    gflags::SetCommandLineOptionWithMode(
        "num_workers", std::to_string(job->num_workers()).c_str(),
        gflags::SET_FLAGS_DEFAULT);
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  gflags::SetUsageMessage(
      "serves a share of a Petrel job's parameters.\n"
      "  petrel-server --scheduler=HOST:PORT [--port=0] "
      "[--config=job.textproto]");
  if (int code = petrel::ParseNodeCommandLine(&argc, &argv); code >= 0) {
    return code;
  }
  FLAGS_logtostderr = true;
  google::InitGoogleLogging(argv[0]);
  petrel::SignalWatcher signals;
  petrel::pb::JobConfig job;
  if (!LoadJob(&job)) return 2;
  absl::StatusOr<petrel::NodeSettings> settings =
      petrel::NodeSettingsFromFlags(petrel::pb::ROLE_SERVER);
  if (settings.ok() && FLAGS_store_mode != "sum" &&
      FLAGS_store_mode != "assign") {
    settings =
        absl::InvalidArgumentError("--store_mode: must be sum or assign");
  }
  if (!settings.ok()) {
    std::fprintf(stderr, "petrel-server: %s\n",
                 std::string(settings.status().message()).c_str());
    return 2;
  }
  petrel::TuneAllocatorForLargeMessages();
  petrel::NodeRuntime runtime(*settings);
  std::unique_ptr<petrel::TableServer> tables;
  if (!FLAGS_config.empty()) {
    petrel::TableServerOptions options;
    options.num_threads = FLAGS_server_threads;
    auto made =
        petrel::TableServer::Create(job, settings->postoffice.num_workers,
                                    runtime.postoffice()->metrics(), options);
    if (!made.ok()) {
      std::fprintf(stderr, "petrel-server: %s: %s\n", FLAGS_config.c_str(),
                   std::string(made.status().message()).c_str());
      return 2;
    }
    tables = *std::move(made);
  }
  signals.Start([&](const std::string& name) {
    runtime.postoffice()->Interrupt(name + " received");
  });
  using Handler = petrel::KVStoreHandler<float>;
  Handler handler(FLAGS_store_mode == "sum" ? Handler::Mode::kSum
                                            : Handler::Mode::kAssign);
  petrel::KVServer<float> server(/*app_id=*/0, runtime.postoffice());
  absl::Status status;
  if (tables != nullptr) {
    server.set_request_handler(tables->handler());
    status = tables->Start();
  } else {
    server.set_request_handler(std::ref(handler), /*accepts_key_slices=*/true);
  }
  if (status.ok()) status = server.Start();
  if (status.ok()) status = runtime.Start();
  if (status.ok()) {
    status = runtime.postoffice()->WaitForTerminate(absl::InfiniteDuration());
  }
  const int rank = runtime.postoffice()->my_rank();
  const int num_servers = runtime.postoffice()->num_servers();
  runtime.Stop();  // no request runs while the model is written
  if (status.ok() && tables != nullptr && !job.train().model_output().empty()) {
    std::string path = job.train().model_output();
    if (num_servers > 1) {
      path = absl::StrCat(path, ".part-", rank, "-of-", num_servers);
    }
    status = tables->WriteModel(path);
    if (status.ok()) LOG(INFO) << "wrote this server's model share to " << path;
  }
  if (status.ok()) {
    LOG(INFO) << "server " << rank << " finished";
  } else {
    std::fprintf(stderr, "petrel-server: %s\n",
                 std::string(status.message()).c_str());
  }
  signals.Stop();
  return status.ok() ? 0 : 1;
}
