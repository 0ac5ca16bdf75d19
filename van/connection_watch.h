// ConnectionWatch: turns connection events of a node's outgoing connections
// (ZeroMQ socket monitor events, one stream per peer address) into "node N
// is gone" verdicts. It maps each address to the node ids routed to it and
// declares those nodes lost when the connection to their address closed and
// did not come back within a grace period.
//
// Why a grace period: ZeroMQ reconnects a DEALER on its own (every 50 ms at
// first), so a connection that a network blip or a proxy cut closed comes
// back at once, while a peer whose process died (kill -9) refuses every
// reconnect. A closed connection is thus only a suspicion; it becomes a
// verdict once it stayed down for `grace`. A connection that never came up
// says nothing (the peer may not have bound yet): only the loss of an
// established one starts the clock. A node is reported once.
//
// The class does no I/O and reads no clock: the caller passes the time, so
// tests drive it directly. Thread safety: not thread-safe; ZmqVan uses it
// from its I/O thread only.
#ifndef PETREL_VAN_CONNECTION_WATCH_H_
#define PETREL_VAN_CONNECTION_WATCH_H_

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/time/time.h"

namespace petrel {

class ConnectionWatch {
 public:
  enum class Event {
    kConnected,      // the TCP connection is up (again)
    kDisconnected,   // an established connection closed
    kConnectFailed,  // a (re)connect attempt failed (e.g. refused)
  };
  struct Lost {
    int node_id = 0;
    std::string address;
    // Why, e.g. "connection closed" or "connection closed and reconnecting
    // was refused".
    std::string reason;
    absl::Duration down_for;
  };

  // `grace` > 0: how long a closed connection may stay down before its
  // nodes count as lost.
  explicit ConnectionWatch(absl::Duration grace) : grace_(grace) {}

  // Routes `node_id` to `address` (replacing an earlier address). Negative
  // ids (temporary routes) are ignored. A node already reported lost is
  // watched afresh (a replacement that took its id): it can be reported
  // again once its new connection was up and is lost.
  void Watch(int node_id, const std::string& address);
  void Forget(int node_id);
  // Records an event of the connection to `address`; unknown addresses are
  // kept too (a node may be routed to them later).
  void OnEvent(const std::string& address, Event event, absl::Time now);
  // The nodes whose connection has been down for at least `grace` at
  // `now` and were not reported before.
  std::vector<Lost> TakeLost(absl::Time now);

 private:
  struct State {
    bool ever_up = false;
    bool up = false;
    bool refused = false;  // a reconnect failed since it went down
    absl::Time down_since;
  };
  const absl::Duration grace_;
  absl::flat_hash_map<int, std::string> address_of_;
  absl::flat_hash_map<std::string, State> states_;
  absl::flat_hash_set<int> reported_;
};

}  // namespace petrel

#endif  // PETREL_VAN_CONNECTION_WATCH_H_
