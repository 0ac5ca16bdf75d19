// The scheduler's failure handling: declaring nodes dead (missed heartbeats
// or a lost connection), telling the others, failing the job. Kept apart
// from admission and barriers in scheduler.cc.
#include "absl/strings/str_cat.h"
#include "glog/logging.h"

#include "scheduler/scheduler.h"

namespace petrel {

void Scheduler::OnConnectionLost(int id, const std::string& reason) {
  absl::MutexLock lock(&mu_);
  // Before the cluster formed nobody depends on the node (a join that went
  // away is caught by the join timeout); after the job ended, nodes leave.
  if (!formed_ || result_.has_value() || id == kSchedulerId ||
      done_workers_.contains(id) || drained_.contains(id)) {
    return;
  }
  for (const pb::Node& n : table_) {
    if (n.id() != id) continue;
    DeclareDead(n, absl::StrCat("died: ", reason),
                last_seen_.contains(id) ? absl::Now() - last_seen_[id]
                                        : absl::ZeroDuration(),
                "connection");
    return;
  }
}

void Scheduler::DeclareDead(const pb::Node& node, const std::string& reason,
                            absl::Duration silent_for,
                            const std::string& cause) {
  for (const DeadNode& d : dead_) {
    if (d.node.id() == node.id()) return;
  }
  const std::string what = absl::StrCat(Describe(node.id()), " ", reason);
  dead_.push_back(DeadNode{node, silent_for, what});
  postoffice_->metrics()
      ->GetCounter("petrel_scheduler_dead_nodes_total",
                   "Nodes declared dead, by cause (heartbeat, connection).",
                   {{"cause", cause}})
      ->Increment();
  LOG(ERROR) << what << "; declared dead";
  postoffice_->van()->MarkPeerDead(node.id());
  // Before any TERMINATE, on the same connections: a node's waits on the
  // dead one fail with this reason rather than the job's.
  pb::Control notice;
  notice.set_cmd(pb::COMMAND_NODE_DEAD);
  *notice.add_nodes() = node;
  notice.set_reason(what);
  const bool failed_over =
      node.role() == pb::ROLE_SERVER && FailOverServer(node, &notice);
  SendToLiveNodes(notice, node.id());
  if (failed_over) return;
  // A training worker's death is survived when the job can hand its data to
  // the live workers (worker_recovery); anything else fails the job.
  if (node.role() == pb::ROLE_WORKER && worker_lost_hook_ &&
      worker_lost_hook_(node.id())) {
    LoseWorker(node.id());
    return;
  }
  if (options_.fail_on_dead_node) {
    TerminateAll(true, what);
    result_ = absl::AbortedError(what);
  }
}

bool Scheduler::TellDeadNode(int sender) {
  for (const DeadNode& d : dead_) {
    if (d.node.id() != sender) continue;
    // A node declared dead that speaks again (SIGSTOP then SIGCONT): the
    // job went on without it. It is told so, naming itself, and stops
    // (Postoffice::HandleNodeDead); the others ignore what it sends.
    LOG_EVERY_T(WARNING, 1.0)
        << Describe(sender)
        << " was declared dead and spoke again; told it is out of the job";
    pb::Control notice;
    notice.set_cmd(pb::COMMAND_NODE_DEAD);
    *notice.add_nodes() = d.node;
    notice.set_reason(absl::StrCat(d.reason, "; the job went on without it"));
    SendControl(sender, std::move(notice));
    return true;
  }
  return false;
}

}  // namespace petrel
