#include "cluster/map_hold.h"

#include <utility>

#include "absl/container/flat_hash_set.h"
#include "glog/logging.h"

namespace petrel {

bool MapHold::Hold(Message& msg, uint64_t version, absl::Time now, int self) {
  const int sender = msg.meta.sender();
  const bool ahead = msg.meta.map_version() > version;
  bool after_held = false;
  if (!ahead) {
    for (const HeldRequest& h : held_) {
      if (h.msg.meta.sender() == sender) {
        after_held = true;
        break;
      }
    }
    if (!after_held) return false;
  }
  if (held_.size() >= kMaxHeld) {
    LOG_EVERY_T(WARNING, 1.0)
        << "node " << self << ": " << held_.size()
        << " requests already wait for a newer key-range map; node " << sender
        << "'s (map version " << msg.meta.map_version()
        << ") is handled by version " << version;
    return false;
  }
  metrics_
      ->GetCounter("petrel_server_requests_held_for_map_total",
                   "Requests a worker sliced by a newer key-range map than "
                   "this server's, held until that map came (with the "
                   "requests behind them).")
      ->Increment();
  held_.push_back(HeldRequest{now, std::move(msg)});
  return true;
}

std::vector<Message> MapHold::Release(uint64_t version, absl::Time now,
                                      int self) {
  std::vector<Message> ready;
  if (held_.empty()) return ready;
  std::deque<HeldRequest> kept;
  absl::flat_hash_set<int> waiting;  // senders with an earlier request kept
  for (HeldRequest& h : held_) {
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
          << "node " << self << ": a request from node " << sender
          << " was sliced by key-range map version " << h.msg.meta.map_version()
          << ", which did not come within " << absl::FormatDuration(kMaxMapHold)
          << "; handled by version " << version;
    }
    ready.push_back(std::move(h.msg));
  }
  held_ = std::move(kept);
  return ready;
}

}  // namespace petrel
