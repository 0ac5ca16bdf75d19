// ZeroMQ socket helpers shared by ZmqVan's I/O thread and the sockets
// application threads send on (ZmqThreadSockets).
//
// ZmqThreadSockets: the DEALER sockets one application thread sends on, one
// per peer address, created on first use. A message sent from such a thread
// goes straight to ZeroMQ instead of through the van thread's queue, which
// saves a thread wake-up per request (about a fifth of a loopback round
// trip). Every socket is used only by the thread that owns the object; the
// van takes them over once, under `mu_`, to close them when it stops.
// Messages one thread sends to one peer stay in order; messages of
// different threads to the same peer travel on different connections and
// may arrive out of order (Customer hands requests to the application in
// their sequence order again).
//
// Thread safety: Send by the owning thread; CloseAll from any thread.
#ifndef PETREL_VAN_ZMQ_SOCKETS_H_
#define PETREL_VAN_ZMQ_SOCKETS_H_

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

#include "security/curve_keys.h"
#include "van/buffer.h"

namespace petrel {

// Routing ids of application-thread sockets: the node's transport id, this
// separator, and the thread's number. Receivers strip the suffix.
inline constexpr char kThreadSocketSeparator[] = "#";

// A DEALER connected to `address` with `routing_id`; null with `*error`
// set when ZeroMQ refuses. Its linger is 2 s (see DropQueued). With a
// `monitor_endpoint`, the socket publishes
// its connection events (connected, disconnected, closed) there
// (zmq_socket_monitor) from before it connects, so none is missed. With
// `curve` keys (CURVE on), the socket is a CURVE client that accepts only
// a peer holding `server_key`; an empty `server_key` is then an error.
void* NewDealer(void* context, const std::string& routing_id,
                const std::string& address, std::string* error,
                const char* monitor_endpoint = nullptr,
                const CurveKeyPair* curve = nullptr,
                const std::string& server_key = "");

// Sets `socket`'s linger to 0, so that closing it drops what it queued.
void DropQueued(void* socket);
// The linger ShortenLinger sets: what is queued may leave within this long.
inline constexpr int kShortLingerMs = 200;
void ShortenLinger(void* socket);

// Sends `frames` (header, data...) as one message without copying; each
// frame's Buffer stays alive until ZeroMQ is done with it. Never blocks.
// Unavailable naming the reason when ZeroMQ refuses.
absl::Status SendFrames(void* socket, const std::vector<Buffer>& frames);

class ZmqThreadSockets {
 public:
  // `curve`: this node's keys when CURVE is on, else null; must outlive
  // this object.
  ZmqThreadSockets(void* context, std::string routing_id,
                   const CurveKeyPair* curve = nullptr)
      : context_(context), routing_id_(std::move(routing_id)), curve_(curve) {}
  ~ZmqThreadSockets() { CloseAll(); }
  ZmqThreadSockets(const ZmqThreadSockets&) = delete;
  ZmqThreadSockets& operator=(const ZmqThreadSockets&) = delete;

  // `server_key`: the peer's CURVE public key (used when CURVE is on).
  // FailedPrecondition after CloseAll; Unavailable when connecting or
  // sending fails.
  absl::Status Send(const std::string& address, const std::string& server_key,
                    const std::vector<Buffer>& frames);
  // Closes every socket (queued messages leave within the linger time,
  // the short one with `short_linger`, except those to an address in
  // `drop`, which are dropped at once). Idempotent.
  void CloseAll(const absl::flat_hash_set<std::string>& drop = {},
                bool short_linger = false);

 private:
  void* const context_;
  const std::string routing_id_;
  const CurveKeyPair* const curve_;
  absl::Mutex mu_;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  absl::flat_hash_map<std::string, void*> sockets_ ABSL_GUARDED_BY(mu_);
};

}  // namespace petrel

#endif  // PETREL_VAN_ZMQ_SOCKETS_H_
