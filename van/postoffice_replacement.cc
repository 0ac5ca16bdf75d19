// Postoffice: a replacement server (docs/failures.md, "Replacement
// servers"). A server started against a running replicated job takes a dead
// server's id and rank; every live node connects to its new address, forgets
// the dead one, and, once the replacement holds its copy, routes by the map
// that counts it as a replica again.
#include "absl/strings/str_cat.h"
#include "glog/logging.h"

#include "van/customer.h"
#include "van/postoffice.h"

namespace petrel {

bool Postoffice::InstallNewerMap(const pb::Control& control) {
  absl::StatusOr<ReplicaMap> map =
      ReplicaMap::FromControl(control, num_servers_);
  if (!map.ok() || map->replicas() < 2) {
    LOG(ERROR) << "key-range map from the scheduler is unusable: "
               << (map.ok() ? "not replicated" : map.status().ToString());
    return false;
  }
  if (map->version() <= map_version_.load(std::memory_order_acquire)) {
    return true;
  }
  LOG(INFO) << "node " << my_id() << ": key-range map version "
            << map->version() << " (" << map->live_servers()
            << " live servers, " << map->under_replicated_ranges()
            << " range(s) with fewer than " << map->replicas() << " replicas)";
  SetReplicaMap(*std::move(map));
  return true;
}

void Postoffice::HandleNodeBack(const pb::Control& control) {
  if (control.nodes_size() != 1 || control.nodes(0).role() != pb::ROLE_SERVER ||
      !IsServerId(control.nodes(0).id())) {
    return;
  }
  const pb::Node& node = control.nodes(0);
  const int id = node.id();
  bool revived = false;
  bool added = false;
  {
    absl::MutexLock lock(&mu_);
    if (!joined_) return;
    if (id != my_id()) {
      added = AddServerLocked(node);  // an added server (elastic)
      for (pb::Node& n : nodes_) {
        if (n.id() == id) n = node;
      }
      revived = dead_.erase(id) > 0;
      if (dead_.empty() && !abandoned_.has_value()) {
        any_dead_.store(false, std::memory_order_release);
      }
    }
    if (control.ranges_size() > 0) InstallNewerMap(control);
  }
  if (added) {
    van_->Connect(node);
    LOG(WARNING) << "node " << my_id() << ": server " << node.rank()
                 << " (node " << id << ") joins the job at " << node.host()
                 << ":" << node.port() << " (an added server)";
    return;
  }
  if (!revived) return;
  van_->Connect(node);
  ForEachCustomer([id](Customer* c) { c->ForgetPeer(id); });
  LOG(WARNING) << "node " << my_id() << ": node " << id << " (server "
               << node.rank() << ") is back at " << node.host() << ":"
               << node.port() << " (a replacement)";
}

absl::Status Postoffice::SendCaughtUp(uint64_t version,
                                      absl::Duration timeout) {
  {
    absl::MutexLock lock(&mu_);
    caught_up_answer_.reset();
  }
  Message msg;
  msg.meta.set_recipient(kSchedulerId);
  msg.meta.set_request(true);
  msg.meta.mutable_control()->set_cmd(pb::COMMAND_CAUGHT_UP);
  msg.meta.mutable_control()->set_map_version(version);
  if (absl::Status s = Send(std::move(msg)); !s.ok()) return s;
  absl::MutexLock lock(&mu_);
  auto answered = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) -> bool {
    return caught_up_answer_.has_value() || terminated_.has_value();
  };
  if (!mu_.AwaitWithTimeout(absl::Condition(&answered), timeout)) {
    return absl::DeadlineExceededError(
        absl::StrCat("no answer from the scheduler to CAUGHT_UP within ",
                     absl::FormatDuration(timeout)));
  }
  if (caught_up_answer_.has_value()) return *caught_up_answer_;
  return *terminated_;
}

}  // namespace petrel
