#include "ps/internal/postoffice.h"

#include <cstdlib>
#include <map>
#include <set>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "glog/logging.h"

#include "cluster/postoffice.h"
#include "node/node_runtime.h"
#include "ps/base.h"
#include "pslite/fatal.h"
#include "pslite/node_environment.h"
#include "scheduler/scheduler.h"

namespace ps {

using petrel::pslite::Die;
using petrel::pslite::DieUnlessOk;

// The node and where it stands: Start and Finalize move it from kNew to
// kRunning to kStopped, once per process however many customers call them.
class Postoffice::Node {
 public:
  explicit Node(petrel::pslite::PsLiteSettings settings)
      : settings_(std::move(settings)), runtime_(settings_.node) {}

  ~Node() {
    if (scheduler_thread_.joinable()) scheduler_thread_.detach();
  }

  void Start(int customer_id, const char* argv0, bool do_barrier);
  void Finalize(int customer_id, bool do_barrier);
  void RegisterExitCallback(const std::function<void()>& cb) {
    absl::MutexLock lock(&mu_);
    exit_callbacks_.push_back(cb);
  }
  void Barrier(int node_group);
  const std::vector<int>& GetNodeIDs(int node_group);
  const std::vector<Range>& GetServerKeyRanges();

  const petrel::pslite::PsLiteSettings& settings() const { return settings_; }
  petrel::Postoffice* postoffice() { return runtime_.postoffice(); }

 private:
  enum class Stage { kNew, kStarting, kRunning, kStopping, kStopped };

  // Joins (or, the scheduler, binds and starts admitting nodes).
  void Join(const char* argv0);
  // Waits for the job's end, runs the exit callbacks and stops the node.
  void Stop(bool do_barrier);
  void AwaitStage(Stage stage) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto reached = [this, stage]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
      return stage_ >= stage;
    };
    mu_.Await(absl::Condition(&reached));
  }

  const petrel::pslite::PsLiteSettings settings_;
  petrel::NodeRuntime runtime_;
  std::unique_ptr<petrel::Scheduler> scheduler_;
  std::thread scheduler_thread_;

  absl::Mutex mu_;
  Stage stage_ ABSL_GUARDED_BY(mu_) = Stage::kNew;
  std::set<int> started_ ABSL_GUARDED_BY(mu_);
  std::set<int> finalized_ ABSL_GUARDED_BY(mu_);
  std::vector<std::function<void()>> exit_callbacks_ ABSL_GUARDED_BY(mu_);
  absl::Status scheduler_result_ ABSL_GUARDED_BY(mu_);
  bool scheduler_done_ ABSL_GUARDED_BY(mu_) = false;
  // Kept so that the references handed out stay valid.
  std::map<int, std::vector<int>> group_ids_ ABSL_GUARDED_BY(mu_);
  std::vector<Range> server_ranges_ ABSL_GUARDED_BY(mu_);
};

void Postoffice::Node::Start(int customer_id, const char* argv0,
                             bool do_barrier) {
  {
    absl::MutexLock lock(&mu_);
    started_.insert(customer_id);
    if (stage_ >= Stage::kStopping) {
      Die(absl::FailedPreconditionError("the node was finalized"),
          absl::StrCat("Start(", customer_id, ")"));
    }
    if (stage_ != Stage::kNew) {
      AwaitStage(Stage::kRunning);
      return;
    }
    stage_ = Stage::kStarting;
  }
  Join(argv0);
  if (do_barrier) Barrier(kScheduler + kServerGroup + kWorkerGroup);
  absl::MutexLock lock(&mu_);
  stage_ = Stage::kRunning;
}

void Postoffice::Node::Join(const char* argv0) {
  if (!google::IsGoogleLoggingInitialized()) {
    google::LogToStderr();
    google::InitGoogleLogging(argv0 != nullptr ? argv0 : "ps");
  }
  petrel::Postoffice* po = runtime_.postoffice();
  if (po->is_scheduler()) {
    petrel::SchedulerOptions options;
    options.auth_token = settings_.node.postoffice.auth_token;
    options.join_timeout = settings_.node.postoffice.join_timeout;
    options.replicas = settings_.replicas;
    scheduler_ = std::make_unique<petrel::Scheduler>(po, options);
  }
  DieUnlessOk(runtime_.Start(), "Start");
  if (scheduler_ != nullptr) {
    scheduler_thread_ = std::thread([this] {
      absl::Status result = scheduler_->Run();
      absl::MutexLock lock(&mu_);
      scheduler_result_ = std::move(result);
      scheduler_done_ = true;
    });
  }
  if (settings_.verbose > 0) {
    LOG(INFO) << "node " << po->my_id() << " started";
  }
}

void Postoffice::Node::Barrier(int node_group) {
  DieUnlessOk(postoffice()->Barrier(node_group, absl::InfiniteDuration()),
              absl::StrCat("Barrier(group ", node_group, ")"));
}

void Postoffice::Node::Finalize(int customer_id, bool do_barrier) {
  {
    absl::MutexLock lock(&mu_);
    finalized_.insert(customer_id);
    if (stage_ == Stage::kNew) {
      stage_ = Stage::kStopped;
      return;
    }
    AwaitStage(Stage::kRunning);
    bool last = stage_ == Stage::kRunning &&
                std::includes(finalized_.begin(), finalized_.end(),
                              started_.begin(), started_.end());
    if (!last) {
      AwaitStage(Stage::kStopped);
      return;
    }
    stage_ = Stage::kStopping;
  }
  Stop(do_barrier);
  absl::MutexLock lock(&mu_);
  stage_ = Stage::kStopped;
}

void Postoffice::Node::Stop(bool do_barrier) {
  petrel::Postoffice* po = postoffice();
  if (do_barrier) Barrier(kScheduler + kServerGroup + kWorkerGroup);
  absl::Status end;
  if (po->is_worker()) {
    end = po->Finish(absl::InfiniteDuration());
  } else if (po->is_server()) {
    end = po->WaitForTerminate(absl::InfiniteDuration());
  } else {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(&scheduler_done_));
    end = scheduler_result_;
  }
  if (scheduler_thread_.joinable()) scheduler_thread_.join();
  std::vector<std::function<void()>> callbacks;
  {
    absl::MutexLock lock(&mu_);
    callbacks.swap(exit_callbacks_);
  }
  for (const auto& cb : callbacks) cb();
  runtime_.Stop();
  DieUnlessOk(end, "Finalize");
  if (settings_.verbose > 0) LOG(INFO) << "node stopped";
}

const std::vector<int>& Postoffice::Node::GetNodeIDs(int node_group) {
  std::vector<int> ids = postoffice()->GetNodeIds(node_group);
  absl::MutexLock lock(&mu_);
  std::vector<int>& kept = group_ids_[node_group];
  if (kept != ids) kept = std::move(ids);
  return kept;
}

const std::vector<Range>& Postoffice::Node::GetServerKeyRanges() {
  const int n = postoffice()->num_servers();
  absl::MutexLock lock(&mu_);
  if (server_ranges_.size() != static_cast<size_t>(n)) {
    server_ranges_.clear();
    for (int i = 0; i < n; ++i) {
      server_ranges_.emplace_back(kMaxKey / n * i, kMaxKey / n * (i + 1));
    }
  }
  return server_ranges_;
}

Postoffice* Postoffice::Get() {
  // Never destroyed: a PS-Lite program may exit without Finalize, with the
  // node's threads still running.
  static Postoffice* const postoffice = new Postoffice();
  return postoffice;
}

Postoffice::Postoffice() {
  absl::StatusOr<petrel::pslite::PsLiteSettings> settings =
      petrel::pslite::SettingsFromEnvironment(&std::getenv);
  if (!settings.ok()) Die(settings.status(), "the PS-Lite environment");
  node_ = std::make_unique<Node>(*std::move(settings));
}

Postoffice::~Postoffice() = default;

void Postoffice::Start(int customer_id, const char* argv0, bool do_barrier) {
  node_->Start(customer_id, argv0, do_barrier);
}

void Postoffice::Finalize(int customer_id, bool do_barrier) {
  node_->Finalize(customer_id, do_barrier);
}

void Postoffice::RegisterExitCallback(const std::function<void()>& cb) {
  node_->RegisterExitCallback(cb);
}

void Postoffice::Barrier(int /*customer_id*/, int node_group) {
  node_->Barrier(node_group);
}

bool Postoffice::is_scheduler() const {
  return node_->settings().node.postoffice.role == petrel::pb::ROLE_SCHEDULER;
}
bool Postoffice::is_server() const {
  return node_->settings().node.postoffice.role == petrel::pb::ROLE_SERVER;
}
bool Postoffice::is_worker() const {
  return node_->settings().node.postoffice.role == petrel::pb::ROLE_WORKER;
}
int Postoffice::my_rank() const {
  return std::max(node_->postoffice()->my_rank(), 0);
}
int Postoffice::num_servers() const {
  return node_->postoffice()->num_servers();
}
int Postoffice::num_workers() const {
  return node_->postoffice()->num_workers();
}
const std::vector<Range>& Postoffice::GetServerKeyRanges() {
  return node_->GetServerKeyRanges();
}
const std::vector<int>& Postoffice::GetNodeIDs(int node_group) const {
  return node_->GetNodeIDs(node_group);
}
int Postoffice::verbose() const { return node_->settings().verbose; }
petrel::Postoffice* Postoffice::petrel() { return node_->postoffice(); }

}  // namespace ps
