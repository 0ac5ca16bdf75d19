#include "scheduler/worker_recovery.h"

#include <algorithm>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "glog/logging.h"

#include "job/checkpoint_protocol.h"
#include "job/recovery_protocol.h"

namespace petrel {
namespace {

constexpr absl::Duration kServerTimeout = absl::Seconds(10);

bool Done(const pb::DataPiece& p) { return p.epoch() >= p.end_epoch(); }

}  // namespace

WorkerRecovery::WorkerRecovery(Postoffice* postoffice, FailJob fail_job)
    : postoffice_(postoffice),
      fail_job_(std::move(fail_job)),
      app_(kRecoveryApp, 0, postoffice) {}

WorkerRecovery::~WorkerRecovery() {
  Stop();
  app_.Stop();  // its handlers use the members destroyed before it
}

absl::Status WorkerRecovery::Start() {
  app_.set_request_handler(
      [this](const SimpleData& d, SimpleApp* app) { Handle(d, app); });
  app_.set_response_handler([this](const SimpleData& d, SimpleApp*) {
    absl::MutexLock lock(&mu_);
    replies_[d.timestamp].push_back(d);
  });
  absl::Status s = app_.Start();
  if (!s.ok()) return s;
  thread_ = std::thread([this] { Loop(); });
  return absl::OkStatus();
}

void WorkerRecovery::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

std::vector<pb::WorkerDeath> WorkerRecovery::deaths() const {
  absl::MutexLock lock(&mu_);
  return deaths_;
}

bool WorkerRecovery::OnWorkerLost(int node_id) {
  const int rank = IdToRank(node_id);
  absl::MutexLock lock(&mu_);
  if (rank < 0 || rank >= static_cast<int>(workers_.size()) ||
      !workers_[rank].reported || workers_[rank].dead ||
      workers_[rank].failed || finished_) {
    return false;
  }
  int live = 0;
  for (const Worker& w : workers_) live += w.dead ? 0 : 1;
  if (live <= 1) return false;  // nobody left to train its data
  workers_[rank].dead = true;
  pending_.push_back(rank);
  return true;
}

void WorkerRecovery::Update(int rank, const pb::WorkerProgress& progress) {
  Worker& w = workers_[rank];
  if (!w.reported) {
    LOG(INFO) << "worker " << rank << " trains " << progress.pieces_size()
              << " piece(s) of the data";
  }
  w.reported = true;
  w.clock = progress.clock();
  w.examples_trained = progress.examples_trained();
  w.batch_size = progress.batch_size();
  for (const pb::DataPiece& p : progress.pieces()) {
    w.pieces[p.id()] = p;
    w.to_deliver.erase(std::remove_if(w.to_deliver.begin(), w.to_deliver.end(),
                                      [&](const pb::DataPiece& d) {
                                        return d.id() == p.id();
                                      }),
                       w.to_deliver.end());
  }
}

void WorkerRecovery::Handle(const SimpleData& d, SimpleApp* app) {
  if (d.head == kFailed && IsWorkerId(d.sender)) {
    if (d.duplicate) {
      app->Response(d).IgnoreError();
      return;
    }
    const std::string reason =
        absl::StrCat("worker ", IdToRank(d.sender), " failed: ", d.body);
    {
      absl::MutexLock lock(&mu_);
      const int rank = IdToRank(d.sender);
      if (rank < static_cast<int>(workers_.size())) {
        workers_[rank].failed = true;
      }
    }
    LOG(ERROR) << reason;
    if (fail_job_) fail_job_(reason);
    app->Response(d).IgnoreError();  // once the job is failing
    return;
  }
  if (d.head == kEval) {
    HandleEval(d, app);
    return;
  }
  pb::WorkerProgress progress;
  const int rank = IdToRank(d.sender);
  const bool parsed = ProtoFromBody(d.body, &progress);
  if (parsed && !d.duplicate && progress_hook_ && IsWorkerId(d.sender) &&
      rank < postoffice_->num_workers() &&
      (d.head == kProgress || d.head == kDone)) {
    progress_hook_(rank, progress);
  }
  absl::MutexLock lock(&mu_);
  if (workers_.empty()) {
    workers_.resize(postoffice_->num_workers());
    next_piece_id_ = postoffice_->num_workers();
  }
  if (!IsWorkerId(d.sender) || rank >= static_cast<int>(workers_.size()) ||
      (d.head != kProgress && d.head != kDone) || !parsed) {
    LOG_EVERY_T(WARNING, 1.0)
        << "ignoring recovery request " << d.head << " from node " << d.sender;
    app->Response(d).IgnoreError();
    return;
  }
  if (d.duplicate || workers_[rank].dead) {
    app->Response(d).IgnoreError();
    return;
  }
  Update(rank, progress);
  Worker& w = workers_[rank];
  if (stop_training_) w.to_deliver.clear();
  if (d.head == kDone) {
    w.waiting_done = d;
    if (!w.to_deliver.empty()) {
      Deliver(rank);
    } else {
      MaybeFinish();
    }
    return;
  }
  pb::RecoveryReply reply;
  for (const pb::DataPiece& p : w.to_deliver) *reply.add_pieces() = p;
  reply.set_stop_training(stop_training_);
  app->Response(
         d, reply.pieces_size() > 0 || stop_training_ ? ProtoToBody(reply) : "")
      .IgnoreError();
}

void WorkerRecovery::HandleEval(const SimpleData& d, SimpleApp* app) {
  pb::EvalReport report;
  if (!IsWorkerId(d.sender) || !ProtoFromBody(d.body, &report)) {
    LOG_EVERY_T(WARNING, 1.0)
        << "ignoring a malformed evaluation report from node " << d.sender;
    app->Response(d).IgnoreError();
    return;
  }
  if (!d.duplicate && eval_hook_) eval_hook_(report);
  pb::RecoveryReply reply;
  {
    absl::MutexLock lock(&mu_);
    if (report.stop_training() && !d.duplicate && !stop_training_) {
      stop_training_ = true;
      LOG(INFO) << "early stopping (worker " << IdToRank(d.sender)
                << "): " << report.reason() << "; every worker stops";
    }
    reply.set_stop_training(stop_training_);
  }
  app->Response(d, ProtoToBody(reply)).IgnoreError();
}

// Answers the worker's waiting kDone with the pieces still to deliver.
void WorkerRecovery::Deliver(int rank) {
  Worker& w = workers_[rank];
  if (!w.waiting_done.has_value()) return;
  pb::RecoveryReply reply;
  for (const pb::DataPiece& p : w.to_deliver) *reply.add_pieces() = p;
  app_.Response(*w.waiting_done, ProtoToBody(reply)).IgnoreError();
  w.waiting_done.reset();
}

void WorkerRecovery::MaybeFinish() {
  if (finished_ || !pending_.empty()) return;
  int leader = -1;
  for (size_t r = 0; r < workers_.size(); ++r) {
    const Worker& w = workers_[r];
    if (w.dead) continue;
    if (!w.waiting_done.has_value()) return;
    if (leader < 0) leader = static_cast<int>(r);
  }
  finished_ = true;
  pb::RecoveryReply reply;
  reply.set_finished(true);
  reply.set_stop_training(stop_training_);
  reply.set_leader(leader);
  for (const pb::WorkerDeath& d : deaths_) *reply.add_deaths() = d;
  for (const Worker& w : workers_) {
    for (const auto& [id, p] : w.pieces) {
      if (id >= static_cast<int64_t>(workers_.size())) {
        reply.set_redistributed(reply.redistributed() + p.examples_trained());
      }
    }
  }
  if (!deaths_.empty()) LOG(INFO) << Summary();
  const std::string body = ProtoToBody(reply);
  for (Worker& w : workers_) {
    if (!w.waiting_done.has_value()) continue;
    app_.Response(*w.waiting_done, body).IgnoreError();
    w.waiting_done.reset();
  }
}

std::string WorkerRecovery::Summary() const {
  int64_t redistributed = 0;
  for (const Worker& w : workers_) {
    for (const auto& [id, p] : w.pieces) {
      if (id >= static_cast<int64_t>(workers_.size())) {
        redistributed += p.examples_trained();
      }
    }
  }
  std::vector<std::string> parts;
  int64_t twice = 0;
  for (const pb::WorkerDeath& d : deaths_) {
    parts.push_back(absl::StrCat("worker ", d.rank(), " died at epoch ",
                                 d.epoch() + 1, " (its data went to workers [",
                                 absl::StrJoin(d.reassigned_to(), ", "), "])"));
    twice += d.trained_twice();
  }
  return absl::StrCat("worker failures: ", absl::StrJoin(parts, "; "), "; ",
                      redistributed, " examples redistributed; ", twice,
                      " trained twice");
}

void WorkerRecovery::Loop() {
  while (true) {
    int rank;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
        return stop_ || !pending_.empty();
      };
      mu_.Await(absl::Condition(&ready));
      if (stop_) return;
      rank = pending_.front();
    }
    Reassign(rank);
  }
}

int64_t WorkerRecovery::DropFromClocks(int rank) {
  const int ts = app_.Request(kDropWorker, std::to_string(rank), kServerGroup);
  const absl::Time deadline = absl::Now() + kServerTimeout;
  absl::Status s;
  // Sliced, so that Stop is not held up by a wait.
  while (true) {
    s = app_.Wait(ts, absl::Milliseconds(100));
    if (!absl::IsDeadlineExceeded(s) || absl::Now() > deadline) break;
    absl::MutexLock lock(&mu_);
    if (stop_) break;
  }
  absl::MutexLock lock(&mu_);
  std::vector<SimpleData> replies = std::move(replies_[ts]);
  replies_.erase(ts);
  if (!s.ok()) {
    LOG(WARNING) << "dropping worker " << rank
                 << " from the servers' clocks: " << s.message() << " ("
                 << replies.size() << " answered)";
  }
  int64_t clock = -1;
  for (const SimpleData& d : replies) {
    int64_t c = -1;
    if (absl::SimpleAtoi(d.body, &c)) clock = std::max(clock, c);
  }
  return clock;
}

void WorkerRecovery::Reassign(int rank) {
  const int64_t server_clock = DropFromClocks(rank);
  absl::MutexLock lock(&mu_);
  Worker& dead = workers_[rank];
  pb::WorkerDeath death;
  death.set_rank(rank);
  death.set_examples_trained(dead.examples_trained);
  auto own = dead.pieces.find(rank);
  if (own != dead.pieces.end()) death.set_epoch(own->second.epoch());
  // Batches whose pushes reached a server after the last report; they are
  // in the pieces' reported positions no more, so they are trained again.
  if (server_clock > dead.clock) {
    death.set_trained_twice((server_clock - dead.clock) * dead.batch_size);
  }
  std::vector<pb::DataPiece> left;
  // After an early stop nobody trains on: its data is not dealt out.
  for (const auto& [id, p] : dead.pieces) {
    if (stop_training_) break;
    for (pb::DataPiece& q : SplitByEpoch(p, &next_piece_id_)) {
      left.push_back(std::move(q));
    }
  }
  std::vector<int> taken;
  for (pb::DataPiece& p : left) {
    int best = -1;
    size_t fewest = 0;
    for (size_t r = 0; r < workers_.size(); ++r) {
      const Worker& w = workers_[r];
      if (w.dead) continue;
      size_t held =
          std::count_if(w.pieces.begin(), w.pieces.end(),
                        [](const auto& kv) { return !Done(kv.second); });
      if (best < 0 || held < fewest) {
        best = static_cast<int>(r);
        fewest = held;
      }
    }
    if (best < 0) break;
    Worker& w = workers_[best];
    w.pieces[p.id()] = p;
    w.to_deliver.push_back(p);
    if (std::find(taken.begin(), taken.end(), best) == taken.end()) {
      taken.push_back(best);
    }
  }
  std::sort(taken.begin(), taken.end());
  for (int r : taken) death.add_reassigned_to(r);
  LOG(WARNING) << "worker " << rank << " died at epoch " << death.epoch() + 1
               << " after " << dead.examples_trained << " examples (clock "
               << dead.clock << " at its last report, " << server_clock
               << " on the servers): " << left.size()
               << " piece(s) of data go to workers ["
               << absl::StrJoin(taken, ", ") << "]; " << death.trained_twice()
               << " examples are trained twice";
  deaths_.push_back(std::move(death));
  pending_.pop_front();
  for (int r : taken) Deliver(r);
  MaybeFinish();
}

}  // namespace petrel
