#include "van/connection_watch.h"

#include <algorithm>

namespace petrel {

void ConnectionWatch::Watch(int node_id, const std::string& address) {
  if (node_id < 0) return;
  address_of_[node_id] = address;
  // A node reported lost and routed again is a new process under its id (a
  // replacement server, at the same address or another): only the loss of
  // its own connection counts, so the old connection's history goes.
  if (reported_.erase(node_id) > 0) states_.erase(address);
}

void ConnectionWatch::Forget(int node_id) { address_of_.erase(node_id); }

void ConnectionWatch::OnEvent(const std::string& address, Event event,
                              absl::Time now) {
  State& s = states_[address];
  switch (event) {
    case Event::kConnected:
      s.ever_up = true;
      s.up = true;
      s.refused = false;
      break;
    case Event::kDisconnected:
      // A second close while down (it came back briefly) restarts nothing:
      // the first close started the grace period.
      if (s.up) s.down_since = now;
      s.up = false;
      break;
    case Event::kConnectFailed:
      if (s.ever_up && !s.up) s.refused = true;
      break;
  }
}

std::vector<ConnectionWatch::Lost> ConnectionWatch::TakeLost(absl::Time now) {
  std::vector<Lost> lost;
  for (const auto& [id, address] : address_of_) {
    if (reported_.contains(id)) continue;
    auto it = states_.find(address);
    if (it == states_.end()) continue;
    const State& s = it->second;
    if (s.up || !s.ever_up || now - s.down_since < grace_) continue;
    reported_.insert(id);
    lost.push_back(Lost{id, address,
                        s.refused ? "connection closed and reconnecting was "
                                    "refused"
                                  : "connection closed",
                        now - s.down_since});
  }
  std::sort(lost.begin(), lost.end(),
            [](const Lost& a, const Lost& b) { return a.node_id < b.node_id; });
  return lost;
}

}  // namespace petrel
