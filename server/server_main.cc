// petrel-server: holds a share of the job's key-value parameters and
// answers pushes and pulls until the scheduler ends the job.
//
//   petrel-server --scheduler=HOST:PORT [--port=0] [--store_mode=sum]
//   petrel-server --scheduler=HOST:PORT --config=job.textproto
//
// Without --config it is a plain key-value store (KVStoreHandler): float
// values on app 0, double, int32 and int64 values on apps of their own
// (kv/kv_typed_stores.h); with it, it serves the job's float tables with
// their optimizers and bounded delay (TableServer), and refuses values of
// other types. The job's num_servers/num_workers are the defaults of
// --num_servers/--num_workers (DMLC_* variables and the flags win).
//
// Checkpoints (with --config): the scheduler's kSave writes this server's
// table files (job/checkpoint_protocol.h). --restore_from (or
// checkpoint.restore_from / warm_start_from) loads a checkpoint's rows
// that this server owns under the new key-range map before it serves,
// then meets the workers at a barrier. SIGTERM/SIGINT asks the scheduler
// to stop the job (after a checkpoint when there is a directory).
//
// Exit codes: 0 the job finished, 1 runtime failure, 2 bad flags or
// configuration.
#include <functional>
#include <memory>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gflags/gflags.h"
#include "glog/logging.h"

#include "base/config_file.h"
#include "base/status_macros.h"
#include "checkpoint/checkpoint_dir.h"
#include "checkpoint/start_checkpoint.h"
#include "job/checkpoint_protocol.h"
#include "job/job_check.h"
#include "job/recovery_protocol.h"
#include "kv/kv_server.h"
#include "kv/kv_typed_stores.h"
#include "server/table_server.h"
#include "van/daemon_main.h"
#include "van/simple_app.h"

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
DEFINE_string(checkpoint_dir, "",
              "Where checkpoints go (--config only); overrides "
              "checkpoint.dir. Default empty.");
DEFINE_string(restore_from, "",
              "A checkpoint directory or 'latest' (in the checkpoint "
              "directory) whose rows and optimizer state this server loads "
              "(--config only); overrides checkpoint.restore_from. Default "
              "empty.");

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
    if (!FLAGS_config.empty()) {
      absl::Status checked = petrel::CheckJobConfig(
          job_, settings.postoffice.num_servers, petrel::PhysicalMemoryBytes());
      if (!checked.ok()) return petrel::Annotate(checked, FLAGS_config);
    }
    if (FLAGS_store_mode != "sum" && FLAGS_store_mode != "assign") {
      return absl::InvalidArgumentError("--store_mode: must be sum or assign");
    }
    num_workers_ = settings.postoffice.num_workers;
    if (FLAGS_config.empty()) {
      if (!FLAGS_checkpoint_dir.empty() || !FLAGS_restore_from.empty()) {
        return absl::InvalidArgumentError(
            "--checkpoint_dir and --restore_from need --config");
      }
      return absl::OkStatus();
    }
    auto* ckpt = job_.mutable_checkpoint();
    if (!FLAGS_checkpoint_dir.empty()) ckpt->set_dir(FLAGS_checkpoint_dir);
    if (!FLAGS_restore_from.empty()) ckpt->set_restore_from(FLAGS_restore_from);
    // Every output is checked before training, not found unwritable after.
    if (!ckpt->dir().empty()) {
      absl::Status s = petrel::CheckWritableDir(ckpt->dir());
      if (!s.ok()) {
        return absl::Status(
            s.code(),
            absl::StrCat("checkpoint.dir ", ckpt->dir(), ": ", s.message()));
      }
    }
    if (!job_.train().model_output().empty()) {
      absl::Status s = petrel::CheckWritableFile(job_.train().model_output());
      if (!s.ok()) {
        return absl::Status(s.code(), absl::StrCat("train.model_output ",
                                                   job_.train().model_output(),
                                                   ": ", s.message()));
      }
    }
    absl::StatusOr<petrel::StartCheckpoint> plan =
        petrel::FindStartCheckpoint(job_.checkpoint(), num_workers_);
    if (!plan.ok()) return plan.status();
    load_ = *std::move(plan);
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
      if (!load_.dir.empty()) {
        std::vector<petrel::pb::CheckpointTable> tables =
            tables_->CheckpointTables();
        absl::Status s =
            petrel::CheckCompatible(load_.manifest, tables, load_.with_state);
        if (!s.ok()) {
          return absl::InvalidArgumentError(
              absl::StrCat("checkpoint ", load_.dir, " does not fit ",
                           FLAGS_config, ": ", s.message()));
        }
      }
      control_ = std::make_unique<petrel::SimpleApp>(petrel::kControlApp, 0,
                                                     runtime.postoffice());
      control_->set_request_handler(
          [this, po = runtime.postoffice()](const petrel::SimpleData& d,
                                            petrel::SimpleApp* app) {
            HandleControl(po, d, app);
          });
      recovery_ = std::make_unique<petrel::SimpleApp>(petrel::kRecoveryApp, 0,
                                                      runtime.postoffice());
      recovery_->set_request_handler(
          [this](const petrel::SimpleData& d, petrel::SimpleApp* app) {
            HandleRecovery(d, app);
          });
    }
    server_ = std::make_unique<petrel::KVServer<float>>(/*app_id=*/0,
                                                        runtime.postoffice());
    typed_ = std::make_unique<petrel::KVTypedStores>(
        runtime.postoffice(), FLAGS_store_mode == "sum",
        /*tables=*/tables_ != nullptr);
    return absl::OkStatus();
  }
  absl::Status Run(petrel::NodeRuntime& runtime) override {
    absl::Status status;
    if (tables_ != nullptr) {
      server_->set_request_handler(tables_->handler());
      status = control_->Start();
      if (status.ok()) status = recovery_->Start();
      // A checkpoint is loaded once the key-range map is known (after the
      // join), before the shard threads start.
      if (status.ok() && load_.dir.empty()) status = tables_->Start();
    } else {
      server_->set_request_handler(std::ref(*handler_),
                                   /*accepts_key_slices=*/true);
    }
    if (status.ok()) status = server_->Start();
    if (status.ok()) status = typed_->Start();
    if (status.ok()) status = runtime.Start();
    if (status.ok() && !load_.dir.empty()) status = Load(runtime);
    if (!status.ok()) return status;
    return runtime.postoffice()->WaitForTerminate(absl::InfiniteDuration());
  }
  // Asks the scheduler to stop the job; before the cluster formed (or
  // without tables) there is nobody to ask.
  void Interrupt(petrel::NodeRuntime& runtime,
                 const std::string& reason) override {
    LOG(INFO) << reason << ": stopping";
    petrel::Postoffice* po = runtime.postoffice();
    if (control_ != nullptr && !po->nodes().empty()) {
      int ts =
          control_->Request(petrel::kStopJob, reason, petrel::kSchedulerId);
      // Without the job config the scheduler does not answer: stop alone.
      if (control_->Wait(ts, absl::Seconds(5)).ok()) {
        LOG(INFO) << reason << ": asked the scheduler to stop the job";
        return;
      }
    }
    po->Interrupt(reason);
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
    if (tables_ != nullptr) {
      for (const std::string& line : tables_->DescribeMemory()) {
        LOG(INFO) << line;
      }
    }
    if (status.ok()) LOG(INFO) << "server " << rank << " finished";
    return status;
  }

 private:
  // Loads the planned checkpoint, starts the tables and lets the workers
  // go (they wait at a barrier of every server and worker).
  absl::Status Load(petrel::NodeRuntime& runtime) {
    petrel::Postoffice* po = runtime.postoffice();
    const absl::Time start = absl::Now();
    absl::Status s =
        tables_->LoadCheckpoint(load_.dir, load_.manifest, po->key_ranges(),
                                po->my_rank(), load_.with_state);
    if (!s.ok()) return s;
    LOG(INFO) << "server " << po->my_rank() << " loaded its rows of "
              << load_.dir << " (from " << load_.manifest.num_servers()
              << " servers) in " << absl::FormatDuration(absl::Now() - start);
    s = tables_->Start();
    if (!s.ok()) return s;
    return po->Barrier(petrel::kServerGroup | petrel::kWorkerGroup,
                       po->options().join_timeout + absl::Minutes(10));
  }
  // kSave from the scheduler: writes this server's table files. Runs on
  // the van thread, so no push or pull runs meanwhile.
  void HandleControl(petrel::Postoffice* po, const petrel::SimpleData& d,
                     petrel::SimpleApp* app) {
    if (d.duplicate) return;
    if (d.head != petrel::kSave || d.sender != petrel::kSchedulerId) {
      app->Response(d).IgnoreError();
      return;
    }
    absl::StatusOr<std::vector<petrel::pb::CheckpointFile>> files =
        tables_->SaveCheckpoint(d.body, po->key_ranges(), po->my_rank());
    if (!files.ok()) {
      LOG(ERROR) << "checkpoint " << d.body << ": " << files.status().message();
      app->Response(d, petrel::EncodeSaveReply(files.status())).IgnoreError();
      return;
    }
    petrel::pb::CheckpointManifest m;
    for (const petrel::pb::CheckpointTable& t : tables_->CheckpointTables()) {
      *m.add_tables() = t;
    }
    for (petrel::pb::CheckpointFile& f : *files) *m.add_files() = std::move(f);
    app->Response(d, petrel::EncodeSaveReply(m)).IgnoreError();
  }

  // kDropWorker from the scheduler: a worker died; it leaves the clock.
  // Runs on the van thread, like the KV handler.
  void HandleRecovery(const petrel::SimpleData& d, petrel::SimpleApp* app) {
    int rank = -1;
    if (d.duplicate || d.head != petrel::kDropWorker ||
        d.sender != petrel::kSchedulerId || !absl::SimpleAtoi(d.body, &rank)) {
      app->Response(d).IgnoreError();
      return;
    }
    app->Response(d, std::to_string(tables_->DropWorker(rank, server_.get())))
        .IgnoreError();
  }

  petrel::pb::JobConfig job_;
  petrel::StartCheckpoint load_;
  std::unique_ptr<petrel::SimpleApp> control_;
  std::unique_ptr<petrel::SimpleApp> recovery_;
  int num_workers_ = 1;
  std::unique_ptr<Handler> handler_;
  std::unique_ptr<petrel::TableServer> tables_;
  std::unique_ptr<petrel::KVServer<float>> server_;
  std::unique_ptr<petrel::KVTypedStores> typed_;  // values of other types
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
