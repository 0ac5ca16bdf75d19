#include "worker/train/worker_control.h"

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

#include "cluster/postoffice.h"
#include "job/checkpoint_protocol.h"

namespace petrel {

WorkerControl::WorkerControl(Postoffice* postoffice)
    : postoffice_(postoffice), app_(kControlApp, 0, postoffice) {}

absl::Status WorkerControl::Start() {
  app_.set_request_handler(
      [this](const SimpleData& d, SimpleApp* app) { Handle(d, app); });
  return app_.Start();
}

void WorkerControl::Handle(const SimpleData& d, SimpleApp* app) {
  if (d.sender != kSchedulerId) {
    LOG_EVERY_T(WARNING, 1.0) << "control request " << d.head << " from node "
                              << d.sender << " ignored (not the scheduler)";
    return;
  }
  if (d.duplicate) return;
  std::string answer;
  {
    absl::MutexLock lock(&mu_);
    switch (d.head) {
      case kPause:
        if (!finished_.has_value()) {
          // Answered by the training thread at its next batch boundary.
          pending_pause_ = d;
          pause_requested_ = true;
          return;
        }
        answer = EncodeWorkerPosition(*finished_);
        break;
      case kResume:
        paused_ = false;
        break;
      case kStop:
        if (!stop_.has_value()) stop_ = d.body;
        break;
      default:
        LOG_EVERY_T(WARNING, 1.0) << "unknown control request " << d.head;
    }
  }
  app->Response(d, answer).IgnoreError();
}

absl::Status WorkerControl::Pause(const pb::WorkerPosition& position,
                                  absl::Duration timeout) {
  SimpleData request;
  {
    absl::MutexLock lock(&mu_);
    if (!pending_pause_.has_value()) return absl::OkStatus();
    request = *std::move(pending_pause_);
    pending_pause_.reset();
    pause_requested_ = false;
    paused_ = true;  // before the answer, so that kResume finds it set
  }
  absl::Status s = app_.Response(request, EncodeWorkerPosition(position));
  if (!s.ok()) return s;
  VLOG(1) << "paused at clock " << position.clock();
  absl::MutexLock lock(&mu_);
  auto released = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) -> bool {
    return !paused_ || stop_.has_value();
  };
  if (!mu_.AwaitWithTimeout(absl::Condition(&released), timeout)) {
    return absl::DeadlineExceededError(
        absl::StrCat("paused for a checkpoint and the scheduler neither "
                     "resumed nor stopped the job within ",
                     absl::FormatDuration(timeout)));
  }
  if (stop_.has_value()) return absl::AbortedError(*stop_);
  return absl::OkStatus();
}

bool WorkerControl::AwaitPauseRequest(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto pending = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return pending_pause_.has_value() || stop_.has_value();
  };
  mu_.AwaitWithTimeout(absl::Condition(&pending), timeout);
  return pending_pause_.has_value();
}

std::optional<std::string> WorkerControl::stop_reason() const {
  absl::MutexLock lock(&mu_);
  return stop_;
}

void WorkerControl::StopLocally(const std::string& reason) {
  absl::MutexLock lock(&mu_);
  if (!stop_.has_value()) stop_ = reason;
}

void WorkerControl::SetFinished(const pb::WorkerPosition& position) {
  std::optional<SimpleData> pending;
  pb::WorkerPosition done = position;
  done.set_finished(true);
  {
    absl::MutexLock lock(&mu_);
    finished_ = done;
    pending.swap(pending_pause_);
    pause_requested_ = false;
  }
  if (pending.has_value()) {
    app_.Response(*pending, EncodeWorkerPosition(done)).IgnoreError();
  }
}

void WorkerControl::RequestCheckpoint(const std::string& reason) {
  app_.Request(kCheckpoint, reason, kSchedulerId);
}

bool WorkerControl::RequestStop(const std::string& reason,
                                absl::Duration ack_timeout) {
  if (postoffice_->nodes().empty()) return false;
  int ts = app_.Request(kStopJob, reason, kSchedulerId);
  return app_.Wait(ts, ack_timeout).ok();
}

}  // namespace petrel
