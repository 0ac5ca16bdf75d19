#include "worker/train/recovery_client.h"

#include "glog/logging.h"

#include "cluster/postoffice.h"
#include "job/checkpoint_protocol.h"
#include "job/recovery_protocol.h"

namespace petrel {

RecoveryClient::RecoveryClient(Postoffice* postoffice)
    : app_(kRecoveryApp, 0, postoffice) {}

absl::Status RecoveryClient::Start() {
  app_.set_response_handler(
      [this](const SimpleData& d, SimpleApp*) { HandleReply(d); });
  return app_.Start();
}

void RecoveryClient::HandleReply(const SimpleData& d) {
  if (d.sender != kSchedulerId || d.body.empty()) return;
  pb::RecoveryReply reply;
  if (!ProtoFromBody(d.body, &reply)) {
    LOG_EVERY_T(WARNING, 1.0) << "malformed recovery reply from the scheduler";
    return;
  }
  if (reply.stop_training()) stop_training_ = true;
  absl::MutexLock lock(&mu_);
  for (const pb::DataPiece& p : reply.pieces()) {
    if (!seen_.insert(p.id()).second) continue;
    new_.push_back(p);
    have_new_ = true;
  }
  if (reply.finished()) finished_ = std::move(reply);
}

void RecoveryClient::Report(const pb::WorkerProgress& progress) {
  app_.Request(kProgress, ProtoToBody(progress), kSchedulerId);
}

std::vector<pb::DataPiece> RecoveryClient::TakeAssigned() {
  std::vector<pb::DataPiece> out;
  if (!have_new_.load()) return out;
  absl::MutexLock lock(&mu_);
  out.swap(new_);
  have_new_ = false;
  return out;
}

bool RecoveryClient::ReportFailure(const std::string& reason,
                                   absl::Duration timeout) {
  const int ts = app_.Request(kFailed, reason, kSchedulerId);
  return app_.Wait(ts, timeout).ok();
}

bool RecoveryClient::ReportEval(const pb::EvalReport& report,
                                absl::Duration wait) {
  const int ts = app_.Request(kEval, ProtoToBody(report), kSchedulerId);
  if (wait <= absl::ZeroDuration()) return false;
  return app_.Wait(ts, wait).ok();
}

absl::StatusOr<pb::RecoveryReply> RecoveryClient::Done(
    const pb::WorkerProgress& progress, absl::Duration timeout) {
  const int ts = app_.Request(kDone, ProtoToBody(progress), kSchedulerId);
  absl::Status s = app_.Wait(ts, timeout);
  if (!s.ok()) return s;
  pb::RecoveryReply reply;
  {
    absl::MutexLock lock(&mu_);
    if (finished_.has_value()) reply = *finished_;
  }
  for (pb::DataPiece& p : TakeAssigned()) *reply.add_pieces() = std::move(p);
  return reply;
}

}  // namespace petrel
