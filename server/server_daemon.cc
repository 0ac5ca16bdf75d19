#include "server/server_daemon.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "glog/logging.h"

#include "base/config_file.h"
#include "base/status_macros.h"
#include "checkpoint/checkpoint_dir.h"
#include "checkpoint/start_checkpoint.h"
#include "cluster/simple_app.h"
#include "job/checkpoint_protocol.h"
#include "job/job_check.h"
#include "job/recovery_protocol.h"
#include "kv/kv_server.h"
#include "kv/kv_typed_stores.h"
#include "server/replacement_catch_up.h"
#include "server/table_server.h"

namespace petrel {
namespace {

using Handler = KVStoreHandler<float>;

class ServerDaemon : public NodeDaemon {
 public:
  explicit ServerDaemon(const ServerDaemonOptions& options) : opts_(options) {}
  ~ServerDaemon() override {
    // The apps' handlers use tables_ and server_, destroyed before them.
    if (control_ != nullptr) control_->Stop();
    if (recovery_ != nullptr) recovery_->Stop();
    JoinDrainCopies();
  }
  bool tunes_allocator() const override { return true; }
  // Reads --config (when given) and makes its cluster sizes the defaults of
  // the node flags.
  absl::Status LoadConfig(ClusterDefaults* defaults) override {
    if (opts_.config_path.empty()) return absl::OkStatus();
    absl::Status s = ParseTextProtoFile(opts_.config_path, &job_);
    if (!s.ok()) return s;
    defaults->num_servers = job_.num_servers();
    defaults->num_workers = job_.num_workers();
    return absl::OkStatus();
  }
  absl::Status CheckFlags(const NodeSettings& settings) override {
    if (!opts_.config_path.empty()) {
      if (opts_.memory_cap_mib >= 0) {
        job_.mutable_server()->set_memory_cap_mib(opts_.memory_cap_mib);
      }
      absl::Status checked = CheckJobConfig(
          job_, settings.postoffice.num_servers, PhysicalMemoryBytes());
      if (!checked.ok()) return Annotate(checked, opts_.config_path);
    }
    num_workers_ = settings.postoffice.num_workers;
    if (opts_.config_path.empty()) {
      if (!opts_.checkpoint_dir.empty() || !opts_.restore_from.empty() ||
          opts_.memory_cap_mib >= 0) {
        return absl::InvalidArgumentError(
            "--checkpoint_dir, --restore_from and --memory_cap_mib need "
            "--config");
      }
      return absl::OkStatus();
    }
    auto* ckpt = job_.mutable_checkpoint();
    if (!opts_.checkpoint_dir.empty()) ckpt->set_dir(opts_.checkpoint_dir);
    if (!opts_.restore_from.empty()) ckpt->set_restore_from(opts_.restore_from);
    // Every output is checked before training, not found unwritable after.
    if (!ckpt->dir().empty()) {
      absl::Status s = CheckWritableDir(ckpt->dir());
      if (!s.ok()) {
        return absl::Status(
            s.code(),
            absl::StrCat("checkpoint.dir ", ckpt->dir(), ": ", s.message()));
      }
    }
    if (!job_.train().model_output().empty()) {
      absl::Status s = CheckWritableFile(job_.train().model_output());
      if (!s.ok()) {
        return absl::Status(s.code(), absl::StrCat("train.model_output ",
                                                   job_.train().model_output(),
                                                   ": ", s.message()));
      }
    }
    absl::StatusOr<StartCheckpoint> plan =
        FindStartCheckpoint(job_.checkpoint(), num_workers_);
    if (!plan.ok()) return plan.status();
    load_ = *std::move(plan);
    return absl::OkStatus();
  }
  absl::Status Build(NodeRuntime& runtime) override {
    // Without tables, the plain store walks large pulls on as many threads
    // as the tables would apply requests on (--server_threads).
    int threads = 1;
    if (opts_.config_path.empty()) {
      threads = opts_.server_threads > 0
                    ? opts_.server_threads
                    : std::clamp(
                          static_cast<int>(std::thread::hardware_concurrency()),
                          1, 256);
    }
    handler_ = std::make_unique<Handler>(
        opts_.sum ? Handler::Mode::kSum : Handler::Mode::kAssign, threads);
    if (!opts_.config_path.empty()) {
      TableServerOptions options;
      options.num_threads = opts_.server_threads;
      options.progress = runtime.startup();
      auto made = TableServer::Create(job_, num_workers_,
                                      runtime.postoffice()->metrics(), options);
      if (!made.ok()) {
        return absl::Status(
            made.status().code(),
            absl::StrCat(opts_.config_path, ": ", made.status().message()));
      }
      tables_ = *std::move(made);
      if (!load_.dir.empty()) {
        std::vector<pb::CheckpointTable> tables = tables_->CheckpointTables();
        absl::Status s =
            CheckCompatible(load_.manifest, tables, load_.with_state);
        if (!s.ok()) {
          return absl::InvalidArgumentError(
              absl::StrCat("checkpoint ", load_.dir, " does not fit ",
                           opts_.config_path, ": ", s.message()));
        }
      }
      control_ =
          std::make_unique<SimpleApp>(kControlApp, 0, runtime.postoffice());
      control_->set_request_handler([this, po = runtime.postoffice()](
                                        const SimpleData& d, SimpleApp* app) {
        HandleControl(po, d, app);
      });
      recovery_ =
          std::make_unique<SimpleApp>(kRecoveryApp, 0, runtime.postoffice());
      recovery_->set_request_handler(
          [this](const SimpleData& d, SimpleApp* app) {
            HandleRecovery(d, app);
          });
    }
    server_ =
        std::make_unique<KVServer<float>>(/*app_id=*/0, runtime.postoffice());
    typed_ = std::make_unique<KVTypedStores>(runtime.postoffice(), opts_.sum,
                                             /*tables=*/tables_ != nullptr);
    return absl::OkStatus();
  }
  absl::Status Run(NodeRuntime& runtime) override {
    absl::Status status;
    if (tables_ != nullptr) {
      server_->set_request_handler(tables_->handler());
      tables_->EnableRangeCopy(server_.get());
      status = control_->Start();
      if (status.ok()) status = recovery_->Start();
      // A checkpoint is loaded once the key-range map is known (after the
      // join), before the shard threads start.
      if (status.ok() && load_.dir.empty()) status = tables_->Start();
    } else {
      server_->set_request_handler(std::ref(*handler_),
                                   /*accepts_key_slices=*/true);
      handler_->EnableRangeCopy(server_.get());
    }
    if (status.ok()) status = server_->Start();
    if (status.ok()) status = typed_->Start();
    // Another server's drain: copy what the scheduler asks, off the van
    // thread.
    runtime.postoffice()->set_drain_copy_hook(
        [this, po = runtime.postoffice()](
            std::vector<std::pair<int, std::vector<int>>> sources) {
          absl::MutexLock lock(&drain_mu_);
          drain_copies_.emplace_back([this, po, sources = std::move(sources)] {
            absl::Status s = CopyForDrain(po, server_.get(), sources,
                                          CatchUpOptions().copy_timeout);
            if (!s.ok()) LOG(ERROR) << s;
          });
        });
    if (status.ok()) status = runtime.Start();
    if (status.ok() && !load_.dir.empty()) status = Load(runtime);
    if (status.ok()) status = CatchUp(runtime.postoffice());
    if (!status.ok()) return status;
    return runtime.postoffice()->WaitForTerminate(absl::InfiniteDuration());
  }
  // Asks the scheduler to stop the job; before the cluster formed (or
  // without tables) there is nobody to ask.
  void Interrupt(NodeRuntime& runtime, const std::string& reason) override {
    LOG(INFO) << reason << ": stopping";
    Postoffice* po = runtime.postoffice();
    // After the job failed or the van stopped (the node is exiting) the
    // request fails at once (Postoffice::AbandonRequests).
    if (control_ != nullptr && !po->nodes().empty()) {
      int ts = control_->Request(kStopJob, reason, kSchedulerId);
      // Without the job config the scheduler does not answer, and a dead
      // one cannot: stop alone.
      if (control_->Wait(ts, kStopAckTimeout).ok()) {
        LOG(INFO) << reason << ": asked the scheduler to stop the job";
        return;
      }
    }
    po->Interrupt(reason);
  }
  // The runtime stopped: no request runs while the model is written.
  absl::Status Finish(NodeRuntime& runtime, absl::Status status) override {
    JoinDrainCopies();
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
  void JoinDrainCopies() {
    std::vector<std::thread> copies;
    {
      absl::MutexLock lock(&drain_mu_);
      copies.swap(drain_copies_);
    }
    for (std::thread& t : copies) t.join();
  }
  // A replacement for a dead server, or an added one (elastic), copies its
  // ranges, then tells the scheduler (server/replacement_catch_up.h).
  // Training tables' installs
  // overwrite rows, so a source's death during the copy is survived.
  absl::Status CatchUp(Postoffice* po) {
    CatchUpOptions options;
    options.install_overwrites = tables_ != nullptr;
    return CatchUpReplacement(po, server_.get(), options);
  }
  // Loads the planned checkpoint, starts the tables and lets the workers
  // go (they wait at a barrier of every server and worker).
  absl::Status Load(NodeRuntime& runtime) {
    Postoffice* po = runtime.postoffice();
    const absl::Time start = absl::Now();
    // The rows of every range this server holds a copy of, backups
    // included (with replicas, each row was saved once, by its primary).
    absl::Status s = tables_->LoadCheckpoint(
        load_.dir, load_.manifest, po->replica_map().HeldBy(po->my_rank()),
        po->my_rank(), load_.with_state);
    if (!s.ok()) return s;
    LOG(INFO) << "server " << po->my_rank() << " loaded its rows of "
              << load_.dir << " (from " << load_.manifest.num_servers()
              << " servers) in " << absl::FormatDuration(absl::Now() - start);
    s = tables_->Start();
    if (!s.ok()) return s;
    return po->Barrier(kServerGroup | kWorkerGroup,
                       po->options().join_timeout + absl::Minutes(10));
  }
  // kSave from the scheduler: writes this server's table files. Runs on
  // the van thread, so no push or pull runs meanwhile.
  void HandleControl(Postoffice* po, const SimpleData& d, SimpleApp* app) {
    if (d.duplicate) return;
    if (d.head != kSave || d.sender != kSchedulerId) {
      app->Response(d).IgnoreError();
      return;
    }
    absl::StatusOr<std::vector<pb::CheckpointFile>> files =
        tables_->SaveCheckpoint(d.body, po->key_ranges(), po->my_rank());
    if (!files.ok()) {
      LOG(ERROR) << "checkpoint " << d.body << ": " << files.status().message();
      app->Response(d, EncodeSaveReply(files.status())).IgnoreError();
      return;
    }
    pb::CheckpointManifest m;
    for (const pb::CheckpointTable& t : tables_->CheckpointTables()) {
      *m.add_tables() = t;
    }
    for (pb::CheckpointFile& f : *files) *m.add_files() = std::move(f);
    app->Response(d, EncodeSaveReply(m)).IgnoreError();
  }

  // kDropWorker from the scheduler: a worker died; it leaves the clock.
  // Runs on the van thread, like the KV handler.
  void HandleRecovery(const SimpleData& d, SimpleApp* app) {
    int rank = -1;
    if (d.duplicate || d.head != kDropWorker || d.sender != kSchedulerId ||
        !absl::SimpleAtoi(d.body, &rank)) {
      app->Response(d).IgnoreError();
      return;
    }
    app->Response(d, std::to_string(tables_->DropWorker(rank, server_.get())))
        .IgnoreError();
  }

  const ServerDaemonOptions opts_;
  pb::JobConfig job_;
  StartCheckpoint load_;
  std::unique_ptr<SimpleApp> control_;
  std::unique_ptr<SimpleApp> recovery_;
  int num_workers_ = 1;
  std::unique_ptr<Handler> handler_;
  std::unique_ptr<TableServer> tables_;
  std::unique_ptr<KVServer<float>> server_;
  std::unique_ptr<KVTypedStores> typed_;  // values of other types
  // Copies for another server's drain (joined in Finish).
  absl::Mutex drain_mu_;
  std::vector<std::thread> drain_copies_ ABSL_GUARDED_BY(drain_mu_);
};

}  // namespace

std::unique_ptr<NodeDaemon> NewServerDaemon(
    const ServerDaemonOptions& options) {
  return std::make_unique<ServerDaemon>(options);
}

}  // namespace petrel
