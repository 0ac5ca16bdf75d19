// MapHold: a server's hold on requests sliced by a newer key-range map than
// its own.
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
//
// Thread safety: thread-compatible (the Postoffice uses it from its van
// thread only).
#ifndef PETREL_CLUSTER_MAP_HOLD_H_
#define PETREL_CLUSTER_MAP_HOLD_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "absl/time/time.h"

#include "base/metrics.h"
#include "van/message.h"

namespace petrel {

class MapHold {
 public:
  // How long a request waits for its map at most.
  static constexpr absl::Duration kMaxMapHold = absl::Seconds(2);
  // Requests in flight from the workers are bounded by their own windows;
  // this bound only keeps a worker that claims a map that never comes from
  // growing the hold.
  static constexpr size_t kMaxHeld = 4096;

  // `metrics` (petrel_server_requests_held_for_map_total) must outlive the
  // hold.
  explicit MapHold(MetricsRegistry* metrics) : metrics_(metrics) {}

  // Takes worker request `msg` when it was sliced by a newer map than
  // `version`, or when an earlier request of its sender is held (they keep
  // their order). True when taken. `self` (this node's id) names it in log
  // lines.
  bool Hold(Message& msg, uint64_t version, absl::Time now, int self);
  // Gives back, in the order they came, the held requests the map at
  // `version` covers or that waited kMaxMapHold, each after any earlier one
  // of its sender.
  std::vector<Message> Release(uint64_t version, absl::Time now, int self);

 private:
  struct HeldRequest {
    absl::Time since;
    Message msg;
  };
  MetricsRegistry* const metrics_;
  std::deque<HeldRequest> held_;
};

}  // namespace petrel

#endif  // PETREL_CLUSTER_MAP_HOLD_H_
