#include "pslite/node.h"

#include <algorithm>
#include <mutex>
#include <utility>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

#include "pslite/fatal.h"

namespace petrel {
namespace pslite {

PsLiteNode::~PsLiteNode() {
  // Only at exit without Finalize: the scheduler's thread may still run.
  if (scheduler_thread_.joinable()) scheduler_thread_.detach();
}

void PsLiteNode::AwaitStage(Stage stage) {
  auto reached = [this, stage]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return stage_ >= stage;
  };
  mu_.Await(absl::Condition(&reached));
}

bool PsLiteNode::running() {
  absl::MutexLock lock(&mu_);
  return stage_ != Stage::kNew && stage_ != Stage::kStopped;
}

void PsLiteNode::Start(int customer_id, const char* argv0, bool do_barrier) {
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
  if (do_barrier) Barrier(kAllGroup);
  absl::MutexLock lock(&mu_);
  stage_ = Stage::kRunning;
}

void PsLiteNode::Join(const char* argv0) {
  // Once per process: a worker's customers start nodes concurrently.
  static std::once_flag logging;
  std::call_once(logging, [argv0] {
    if (google::IsGoogleLoggingInitialized()) return;
    google::LogToStderr();
    google::InitGoogleLogging(argv0 != nullptr ? argv0 : "ps");
  });
  Postoffice* po = postoffice();
  if (po->is_scheduler()) {
    SchedulerOptions options;
    options.auth_token = settings_.node.postoffice.auth_token;
    options.join_timeout = settings_.node.postoffice.join_timeout;
    options.replicas = settings_.replicas;
    scheduler_ = std::make_unique<Scheduler>(po, options);
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
  if (settings_.verbose > 0) LOG(INFO) << "node " << po->my_id() << " started";
}

void PsLiteNode::Barrier(int node_group) {
  DieUnlessOk(postoffice()->Barrier(node_group, absl::InfiniteDuration()),
              absl::StrCat("Barrier(group ", node_group, ")"));
}

void PsLiteNode::Finalize(int customer_id, bool do_barrier) {
  {
    absl::MutexLock lock(&mu_);
    finalized_.insert(customer_id);
    if (stage_ == Stage::kNew) {
      stage_ = Stage::kStopped;
      return;
    }
    AwaitStage(Stage::kRunning);
    const bool last = stage_ == Stage::kRunning &&
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

void PsLiteNode::Stop(bool do_barrier) {
  Postoffice* po = postoffice();
  if (do_barrier) {
    absl::Status s = po->Barrier(kAllGroup, absl::InfiniteDuration());
    // The job ends cleanly only once every worker finished, so a node that
    // learns of the end before its barrier's release (they come from
    // different threads of the scheduler) has nobody left to wait for.
    if (!s.ok() && !po->WaitForTerminate(absl::ZeroDuration()).ok()) {
      Die(s, "Finalize: Barrier(group 7)");
    }
  }
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
  if (before_stop_) before_stop_();
  runtime_.Stop();
  DieUnlessOk(end, "Finalize");
  if (settings_.verbose > 0) LOG(INFO) << "node stopped";
}

}  // namespace pslite
}  // namespace petrel
