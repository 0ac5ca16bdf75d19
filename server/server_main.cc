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
// Exit codes: 0 the job finished, 1 runtime failure, 2 bad flags or
// configuration.
#include <functional>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gflags/gflags.h"
#include "glog/logging.h"

#include "base/config_file.h"
#include "kv/kv_server.h"
#include "server/table_server.h"
#include "van/daemon_main.h"

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

using Handler = petrel::KVStoreHandler<float>;

class ServerDaemon : public petrel::NodeDaemon {
 public:
  // Reads --config (when given) and makes its cluster sizes the defaults of
  // the node flags.
  absl::Status LoadConfig() override {
    if (FLAGS_config.empty()) return absl::OkStatus();
    absl::Status s = petrel::ParseTextProtoFile(FLAGS_config, &job_);
    if (!s.ok()) return s;
    if (job_.num_servers() > 0) {
      gflags::SetCommandLineOptionWithMode(
          "num_servers", std::to_string(job_.num_servers()).c_str(),
          gflags::SET_FLAGS_DEFAULT);
    }
    if (job_.num_workers() > 0) {
      gflags::SetCommandLineOptionWithMode(
          "num_workers", std::to_string(job_.num_workers()).c_str(),
          gflags::SET_FLAGS_DEFAULT);
    }
    return absl::OkStatus();
  }
  absl::Status CheckFlags(const petrel::NodeSettings& settings) override {
    if (FLAGS_store_mode != "sum" && FLAGS_store_mode != "assign") {
      return absl::InvalidArgumentError("--store_mode: must be sum or assign");
    }
    num_workers_ = settings.postoffice.num_workers;
    return absl::OkStatus();
  }
  absl::Status Build(petrel::NodeRuntime& runtime) override {
    handler_ = std::make_unique<Handler>(FLAGS_store_mode == "sum"
                                             ? Handler::Mode::kSum
                                             : Handler::Mode::kAssign);
    if (!FLAGS_config.empty()) {
      petrel::TableServerOptions options;
      options.num_threads = FLAGS_server_threads;
      auto made = petrel::TableServer::Create(
          job_, num_workers_, runtime.postoffice()->metrics(), options);
      if (!made.ok()) {
        return absl::Status(
            made.status().code(),
            absl::StrCat(FLAGS_config, ": ", made.status().message()));
      }
      tables_ = *std::move(made);
    }
    server_ = std::make_unique<petrel::KVServer<float>>(/*app_id=*/0,
                                                        runtime.postoffice());
    return absl::OkStatus();
  }
  absl::Status Run(petrel::NodeRuntime& runtime) override {
    absl::Status status;
    if (tables_ != nullptr) {
      server_->set_request_handler(tables_->handler());
      status = tables_->Start();
    } else {
      server_->set_request_handler(std::ref(*handler_),
                                   /*accepts_key_slices=*/true);
    }
    if (status.ok()) status = server_->Start();
    if (status.ok()) status = runtime.Start();
    if (!status.ok()) return status;
    return runtime.postoffice()->WaitForTerminate(absl::InfiniteDuration());
  }
  // The runtime stopped: no request runs while the model is written.
  absl::Status Finish(petrel::NodeRuntime& runtime,
                      absl::Status status) override {
    const int rank = runtime.postoffice()->my_rank();
    const int num_servers = runtime.postoffice()->num_servers();
    if (status.ok() && tables_ != nullptr &&
        !job_.train().model_output().empty()) {
      std::string path = job_.train().model_output();
      if (num_servers > 1) {
        path = absl::StrCat(path, ".part-", rank, "-of-", num_servers);
      }
      status = tables_->WriteModel(path);
      if (status.ok()) {
        LOG(INFO) << "wrote this server's model share to " << path;
      }
    }
    if (status.ok()) LOG(INFO) << "server " << rank << " finished";
    return status;
  }

 private:
  petrel::pb::JobConfig job_;
  int num_workers_ = 1;
  std::unique_ptr<Handler> handler_;
  std::unique_ptr<petrel::TableServer> tables_;
  std::unique_ptr<petrel::KVServer<float>> server_;
};

}  // namespace

int main(int argc, char** argv) {
  petrel::DaemonInfo info;
  info.name = "petrel-server";
  info.role = petrel::pb::ROLE_SERVER;
  info.usage =
      "serves a share of a Petrel job's parameters.\n"
      "  petrel-server --scheduler=HOST:PORT [--port=0] "
      "[--config=job.textproto]";
  info.tune_allocator = true;
  return petrel::RunNodeDaemon(argc, argv, info,
                               std::make_unique<ServerDaemon>());
}
