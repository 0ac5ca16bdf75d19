// Postoffice: elastic servers (docs/failures.md, "Elastic servers"). A
// server added to a running job is one more server of the table and of the
// ring: every node learns it from the scheduler's NODE_BACK, connects to
// it, and routes by the map that gives it its share once it holds it.
// Draining a server: a server that gains copies under the drained map copies
// them when the scheduler asks (DRAIN_COPY); every live node answers the
// scheduler's DRAIN_QUERY once it routes by the drained map, routes no
// request at the moment (Postoffice::RoutingScope) and waits for no answer
// from the drained server.
#include <algorithm>
#include <map>

#include "glog/logging.h"

#include "van/customer.h"
#include "van/postoffice.h"

namespace petrel {

bool Postoffice::AddServerLocked(const pb::Node& node) {
  for (const pb::Node& n : nodes_) {
    if (n.id() == node.id()) return false;
  }
  nodes_.push_back(node);
  num_servers_ = std::max(num_servers_, node.rank() + 1);
  return true;
}

void Postoffice::AddServer(const pb::Node& node) {
  absl::MutexLock lock(&mu_);
  AddServerLocked(node);
}

bool Postoffice::joined_as_added() const {
  absl::MutexLock lock(&mu_);
  return joined_as_added_;
}

void Postoffice::HandleDrainCopy(const pb::Control& control) {
  if (control.drain_sources_size() != control.drain_ranges_size() ||
      !drain_copy_hook_) {
    LOG(ERROR) << "node " << my_id() << ": ignoring a DRAIN_COPY ("
               << (drain_copy_hook_ ? "malformed"
                                    : "this node copies no "
                                      "ranges")
               << ")";
    return;
  }
  std::map<int, std::vector<int>> by_source;
  for (int i = 0; i < control.drain_sources_size(); ++i) {
    by_source[control.drain_sources(i)].push_back(control.drain_ranges(i));
  }
  drain_copy_hook_({by_source.begin(), by_source.end()});
}

bool Postoffice::Retired(int id) const {
  absl::MutexLock lock(&mu_);
  return retired_.contains(id);
}

void Postoffice::HandleDrainQuery(const pb::Control& control) {
  if (map_version() < control.map_version()) return;
  const int drained = control.drained_node();
  // The last round: from the answer on, no clock goes to the drained
  // server (a worker's clock is routed by the node table, not the map).
  // Marked before the checks below, so that a clock routed meanwhile
  // either sees the mark or holds a RoutingScope (checked after).
  const bool retire = control.drain_retire();
  if (retire) {
    absl::MutexLock lock(&mu_);
    retired_.insert(drained);
  }
  auto not_yet = [this, retire, drained] {
    if (retire) {
      absl::MutexLock lock(&mu_);
      retired_.erase(drained);
    }
  };
  // A request routed by the map before this one may be between its
  // routing and its registration (RoutingScope): not yet.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (routing_.load(std::memory_order_acquire) > 0) return not_yet();
  bool waiting = false;
  ForEachCustomer([&waiting, drained](Customer* c) {
    waiting = waiting || c->HasPendingTo(drained);
  });
  if (waiting) return not_yet();  // the scheduler asks again
  Message msg;
  msg.meta.set_recipient(kSchedulerId);
  msg.meta.set_request(true);
  pb::Control* done = msg.meta.mutable_control();
  done->set_cmd(pb::COMMAND_DRAIN_DONE);
  done->set_drained_node(drained);
  done->set_map_version(control.map_version());
  done->set_drain_retire(retire);  // which round it answers
  Send(std::move(msg)).IgnoreError();
}

}  // namespace petrel
