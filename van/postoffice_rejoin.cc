// The Postoffice's side of a scheduler's death: the watch on the scheduler
// (it answers every heartbeat), the rejoin that lets a scheduler restarted
// with --recover rebuild the node table, and the bounded give-up. Kept
// apart from joining, barriers and dispatch in postoffice.cc.
//
// Rebinding: the one place where a node accepts a new scheduler connection
// is here. While the scheduler is lost the van accepts join replies from an
// unknown connection (Van::set_rejoining, as before the first join); the
// restarted scheduler's reply to a rejoin carries its own node, whose
// transport identity HandleRejoinReply binds to kSchedulerId (Connect).
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

#include "base/out_of_job.h"
#include "van/customer.h"
#include "van/postoffice.h"

namespace petrel {

std::string Postoffice::SchedulerAddress() const {
  return absl::StrCat(options_.scheduler_host, ":", options_.scheduler_port);
}

void Postoffice::Terminate(const absl::Status& status) {
  {
    absl::MutexLock lock(&mu_);
    if (terminated_.has_value()) return;
    terminated_ = status;
  }
  // Nothing will answer any more: pending requests end now, with the
  // job's reason, rather than at their deadline.
  if (!status.ok()) AbandonRequests(status);
}

void Postoffice::OnSchedulerWatch(SchedulerWatch::Action action,
                                  absl::Time now) {
  absl::Duration silent;
  {
    absl::MutexLock lock(&mu_);
    silent = scheduler_watch_.silent_for(now);
  }
  silent = absl::Trunc(silent, absl::Milliseconds(100));
  switch (action) {
    case SchedulerWatch::Action::kNone:
      return;
    case SchedulerWatch::Action::kLost:
      van_->set_rejoining(true);
      LOG(WARNING) << "lost the scheduler " << SchedulerAddress()
                   << " (nothing heard for " << absl::FormatDuration(silent)
                   << "); pushes and pulls go on; waiting up to "
                   << absl::FormatDuration(options_.scheduler_grace)
                   << " for it to return (restart it with --recover)";
      SendRejoin();
      return;
    case SchedulerWatch::Action::kRejoin:
      SendRejoin();
      return;
    case SchedulerWatch::Action::kGiveUp: {
      const std::string line = absl::StrCat(
          "scheduler ", SchedulerAddress(), " unreachable for ",
          absl::FormatDuration(absl::Trunc(silent, absl::Seconds(1))),
          "; stopping");
      LOG(ERROR) << line;
      // What is queued for it (rejoins) need not hold up the exit.
      van_->MarkPeerDead(kSchedulerId);
      Terminate(absl::UnavailableError(line));
      return;
    }
  }
}

void Postoffice::SendRejoin() {
  Message msg;
  msg.meta.set_recipient(kSchedulerId);
  msg.meta.set_request(true);
  pb::Control* control = msg.meta.mutable_control();
  control->set_cmd(pb::COMMAND_ADD_NODE);
  control->set_auth_token(options_.auth_token);
  pb::Node* self = control->add_nodes();
  *self = SelfNode();
  {
    absl::MutexLock lock(&mu_);
    self->set_rank(my_rank_);
    // The map this node routes by, replicas and version included: a
    // restarted scheduler takes the newest one the nodes report.
    if (replica_map_.has_value()) {
      replica_map_->ToControl(control);
    } else if (ranges_.has_value()) {
      for (uint64_t b : ranges_->begins()) control->add_ranges(b);
      for (int32_t o : ranges_->owners()) control->add_range_owners(o);
    }
  }
  VLOG(1) << "asking the scheduler " << SchedulerAddress() << " to rejoin";
  Send(std::move(msg)).IgnoreError();
}

void Postoffice::HandleRejoinReply(const pb::Control& control) {
  // The answer to a rejoin lists the scheduler's node and this node's.
  const pb::Node* scheduler = nullptr;
  for (const pb::Node& node : control.nodes()) {
    if (node.id() == kSchedulerId) scheduler = &node;
  }
  if (scheduler == nullptr) return;  // the first join's answer, repeated
  std::vector<std::pair<int, uint64_t>> barriers;
  bool worker_done = false;
  absl::Duration gone;
  {
    absl::MutexLock lock(&mu_);
    if (!scheduler_watch_.lost()) return;  // a repeated answer
    // The (maybe new) scheduler's identity: its messages are accepted from
    // now on, like those of the first. Its address stays the one this node
    // joined by, and its CURVE key the configured one: a node takes neither
    // from the wire.
    pb::Node bound = *scheduler;
    bound.set_host(options_.scheduler_host);
    bound.set_port(options_.scheduler_port);
    bound.clear_curve_public_key();
    van_->Connect(bound);
    van_->set_rejoining(false);
    gone = scheduler_watch_.Rejoined(absl::Now());
    for (const auto& [group, sent] : barrier_sent_) {
      auto it = barrier_done_.find(group);
      if (it == barrier_done_.end() || it->second < sent) {
        barriers.emplace_back(group, sent);
      }
    }
    worker_done = worker_done_sent_;
  }
  LOG(WARNING) << "the scheduler " << SchedulerAddress() << " took node "
               << my_id() << " back after "
               << absl::FormatDuration(
                      absl::Trunc(gone, absl::Milliseconds(100)))
               << (barriers.empty() ? "" : "; sending its barriers again")
               << (worker_done ? "; reporting this worker finished again" : "");
  // A restarted scheduler knows nothing of them.
  for (const auto& [group, epoch] : barriers) {
    Message msg;
    msg.meta.set_recipient(kSchedulerId);
    msg.meta.set_request(true);
    msg.meta.mutable_control()->set_cmd(pb::COMMAND_BARRIER);
    msg.meta.mutable_control()->set_barrier_group(group);
    msg.meta.mutable_control()->set_barrier_epoch(epoch);
    Send(std::move(msg)).IgnoreError();
  }
  if (worker_done) {
    Message msg;
    msg.meta.set_recipient(kSchedulerId);
    msg.meta.set_request(true);
    msg.meta.mutable_control()->set_cmd(pb::COMMAND_WORKER_DONE);
    Send(std::move(msg)).IgnoreError();
  }
}

void Postoffice::HandleRejoinRefused(const pb::Control& control) {
  {
    absl::MutexLock lock(&mu_);
    if (!scheduler_watch_.lost()) return;
  }
  // Declared dead while it was away (paused, cut off): the job went on
  // without it, so it leaves quietly (exit kExitOutOfJob), not as failed.
  // Both ways a node learns it was declared dead (this refusal, or a
  // NODE_DEAD naming it) say "is out of the job".
  const std::string line = absl::StrCat(
      "the scheduler ", SchedulerAddress(),
      " refused to take this node back: ", control.reason(),
      control.out_of_job() ? "; this node is out of the job, stopping" : "");
  LOG(ERROR) << line;
  Terminate(control.out_of_job() ? OutOfJobError(line)
                                 : absl::FailedPreconditionError(line));
}

}  // namespace petrel
