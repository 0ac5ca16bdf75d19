// A server's hold on requests sliced by a newer key-range map than its own.
//
// The scheduler sends a failover's, a replacement's and an add's map to
// every node at once, so a worker may install it before a server does and
// send that server a request sliced by it. A server still on the old map
// would forward a push to its backups in the old map, which may miss a
// replica of the new one (docs/failures.md, "The order in which nodes learn
// a map"). So the server holds such a request, and every later one from the
// same worker, until its own map reaches that version; the map is on its
// way, so this is a wait of milliseconds. A map that does not come within
// kMaxMapHold (the scheduler died between the two sends) releases them as
// before, with a log line, and so does a full hold.
#include <deque>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "glog/logging.h"

#include "van/postoffice.h"

namespace petrel {
namespace {

constexpr absl::Duration kMaxMapHold = absl::Seconds(2);
// Requests in flight from the workers are bounded by their own windows;
// this bound only keeps a worker that claims a map that never comes from
// growing the hold.
constexpr size_t kMaxHeldForMap = 4096;

}  // namespace

bool Postoffice::HoldIfAheadOfMap(Message& msg, absl::Time now) {
  if (!is_server() || !msg.meta.request() || !IsWorkerId(msg.meta.sender())) {
    return false;
  }
  const int sender = msg.meta.sender();
  const bool ahead =
      msg.meta.map_version() > map_version_.load(std::memory_order_acquire);
  bool after_held = false;
  if (!ahead) {
    for (const HeldRequest& h : held_for_map_) {
      if (h.msg.meta.sender() == sender) {
        after_held = true;
        break;
      }
    }
    if (!after_held) return false;
  }
  if (held_for_map_.size() >= kMaxHeldForMap) {
    LOG_EVERY_T(WARNING, 1.0)
        << "node " << my_id() << ": " << held_for_map_.size()
        << " requests already wait for a newer key-range map; node " << sender
        << "'s (map version " << msg.meta.map_version()
        << ") is handled by version "
        << map_version_.load(std::memory_order_acquire);
    return false;
  }
  metrics_
      ->GetCounter("petrel_server_requests_held_for_map_total",
                   "Requests a worker sliced by a newer key-range map than "
                   "this server's, held until that map came (with the "
                   "requests behind them).")
      ->Increment();
  held_for_map_.push_back(HeldRequest{now, std::move(msg)});
  return true;
}

void Postoffice::ReleaseHeldRequests(absl::Time now) {
  if (held_for_map_.empty()) return;
  const uint64_t version = map_version_.load(std::memory_order_acquire);
  std::vector<Message> ready;
  std::deque<HeldRequest> kept;
  absl::flat_hash_set<int> waiting;  // senders with an earlier request kept
  for (HeldRequest& h : held_for_map_) {
    const int sender = h.msg.meta.sender();
    const bool covered = h.msg.meta.map_version() <= version;
    const bool expired = now - h.since >= kMaxMapHold;
    if (waiting.contains(sender) || (!covered && !expired)) {
      waiting.insert(sender);
      kept.push_back(std::move(h));
      continue;
    }
    if (!covered) {
      LOG_EVERY_T(WARNING, 1.0)
          << "node " << my_id() << ": a request from node " << sender
          << " was sliced by key-range map version " << h.msg.meta.map_version()
          << ", which did not come within " << absl::FormatDuration(kMaxMapHold)
          << "; handled by version " << version;
    }
    ready.push_back(std::move(h.msg));
  }
  held_for_map_ = std::move(kept);
  for (Message& m : ready) DispatchData(std::move(m));
}

}  // namespace petrel
