// PeerRegistry: the bookkeeping behind ConnectionGuard. It knows every
// connection accepted on a node's port (by file descriptor), how many bytes
// each delivered as whole messages and whether those came from a member of
// the cluster (an identity the van has bound to a node, or a joining node
// that presented the right token), and decides, from how many bytes TCP
// received on each, which connections break their budget:
//
// - a connection that is not a member may hold at most
//   PeerBudget::non_member_bytes received but not yet delivered, and all of
//   them together non_member_total_bytes (the largest are cut first);
// - at most max_non_member_connections such connections may be open (those
//   that delivered nothing are cut first, oldest first);
// - a member's connection may hold at most member_bytes in flight.
//
// "In flight" is what TCP received minus what was delivered: a message
// ZeroMQ is still assembling, or complete ones not yet read. ZeroMQ gives a
// ROUTER's reader a multipart message only once it is whole, so this count
// is the only way to see a message grow before it is buffered in full.
//
// Pure logic, no sockets: ConnectionGuard feeds it events and byte counts.
// Thread safety: thread-safe.
#ifndef PETREL_SECURITY_PEER_REGISTRY_H_
#define PETREL_SECURITY_PEER_REGISTRY_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace petrel {

// What a node spends on peers that are not (yet) members, and on members.
struct PeerBudget {
  // Bytes a connection that is not a member may have sent and not had
  // delivered. It must hold the first message a member sends on a new
  // connection (a push part, 1 MiB by default). Default 16 MiB.
  int64_t non_member_bytes = int64_t{16} << 20;
  // The same, summed over all such connections. Default 256 MiB.
  int64_t non_member_total_bytes = int64_t{256} << 20;
  // Connections open at once that are not members. Default 256; also at
  // most a quarter of the process's file descriptor limit.
  int max_non_member_connections = 256;
  // Bytes a member's connection may have in flight; 0 means
  // --max_message_bytes plus 1 MiB (one whole message and its header).
  int64_t member_bytes = 0;
  // Time a new connection has to complete the ZeroMQ handshake
  // (ZMQ_HANDSHAKE_IVL). Default 5 s.
  absl::Duration handshake_timeout = absl::Seconds(5);
  // How often the guard checks the byte counts. Default 10 ms.
  absl::Duration check_interval = absl::Milliseconds(10);
};

class PeerRegistry {
 public:
  enum class Reason {
    kNonMemberBytes,  // one non-member connection over its budget
    kNonMemberTotal,  // non-member connections together over theirs
    kNonMemberCount,  // too many non-member connections
    kMemberBytes,     // a member's connection over its budget
  };
  // The metric label of `reason` ("non_member_bytes", ...).
  static const char* ReasonName(Reason reason);
  static std::vector<Reason> AllReasons();

  struct Cut {
    int fd = -1;
    uint64_t cookie = 0;  // as given to Accepted
    Reason reason;
    int64_t in_flight = 0;
  };

  // `member_bytes` is the resolved PeerBudget::member_bytes.
  PeerRegistry(const PeerBudget& budget, int64_t member_bytes);

  // A connection was accepted on `fd`; `cookie` (non-zero) tells it apart
  // from a later one on the same descriptor. Replaces an earlier record of
  // `fd` unless that has the same cookie.
  void Accepted(int fd, uint64_t cookie);
  void Closed(int fd);
  // A whole message of `wire_bytes` arrived on `fd`; `is_member()` says
  // whether its sender is a member (asked only while the connection is not
  // yet one). A connection is a member from its first such message on.
  // False (nothing recorded) when `fd` is unknown.
  bool Delivered(int fd, int64_t wire_bytes,
                 absl::FunctionRef<bool()> is_member);
  // Which connections to cut. `received(fd)` is the bytes TCP received on
  // fd so far (-1: unknown, skipped). `include_members`: check all members
  // too; otherwise only those that held more than kHotBytes last time.
  std::vector<Cut> Check(const std::function<int64_t(int fd)>& received,
                         bool include_members);

  int connections() const;
  // Connections that are not members and were not cut.
  int non_members() const;
  // The cookie recorded for `fd`, 0 when none.
  uint64_t cookie(int fd) const;
  // Lowers max_non_member_connections (e.g. to fit the descriptor limit).
  void LimitNonMembers(int max);

 private:
  struct Conn {
    uint64_t cookie = 0;
    uint64_t order = 0;  // accept order
    int64_t delivered = 0;
    bool any_delivered = false;
    bool member = false;
    bool cut = false;  // Check chose it; gone once its close is seen
    // A member's connection that held over kHotBytes at its last check:
    // checked every time, not only with include_members.
    bool hot = false;
  };

  const PeerBudget budget_;
  const int64_t member_bytes_;
  mutable absl::Mutex mu_;
  int max_non_members_ ABSL_GUARDED_BY(mu_);
  uint64_t next_order_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<int, Conn> conns_ ABSL_GUARDED_BY(mu_);
};

// ZeroMQ framing that a received message cost on the wire beyond its
// frames' bytes (at most 9 bytes of flags and size per frame), and the
// handshake's bytes, which TCP counts but no message carries.
inline constexpr int64_t kWireBytesPerFrame = 9;
inline constexpr int64_t kHandshakeBytes = 1024;
// A member's connection holding more than this is checked every round.
inline constexpr int64_t kHotBytes = int64_t{1} << 20;

}  // namespace petrel

#endif  // PETREL_SECURITY_PEER_REGISTRY_H_
