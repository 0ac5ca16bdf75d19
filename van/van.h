// Van: the transport interface. A Van moves validated Messages between nodes
// and nothing more: join, barriers and heartbeats live in the Postoffice and
// the scheduler. Implementations: ZmqVan (TCP through ZeroMQ) and LoopbackVan
// (in-process, for tests). The shared base validates every received message
// with DecodeMessage, counts and logs rejects, and dispatches the rest.
//
// Thread safety: thread-safe but for Start and Stop (owner only); handlers
// run one at a time. See docs/threading.md.
#ifndef PETREL_VAN_VAN_H_
#define PETREL_VAN_VAN_H_

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

#include "base/metrics.h"
#include "proto/meta.pb.h"
#include "security/curve_keys.h"
#include "security/peer_registry.h"
#include "van/message.h"
#include "van/wire_codec.h"

namespace petrel {

struct VanOptions {
  // Address to bind. Default "0.0.0.0" (all interfaces).
  std::string bind_host = "0.0.0.0";
  // Port to bind; 0 lets the kernel pick a free one (no close-rebind race).
  int port = 0;
  DecodeLimits limits;
  // How often the tick handler runs. Default 50 ms; range 1 ms .. 10 s.
  absl::Duration tick_interval = absl::Milliseconds(50);
  // CURVE security (docs/security.md). Default off: the cluster is open.
  // ZmqVan only; other vans ignore it.
  CurveOptions curve;
  // Memory and connections granted to peers (ZmqVan; see peer_registry.h).
  PeerBudget peers;
  // ZmqVan sends data frames larger than this as parts of this size, so
  // that encrypting them overlaps decrypting them (van/frame_split.h). -1
  // (default): kDefaultCurvePartBytes with CURVE on, never without; 0:
  // never. Received split messages are joined whatever this says.
  int64_t split_frame_bytes = -1;
  // ZmqVan pins its I/O thread and ZeroMQ's I/O thread to this CPU; -1
  // (default) leaves them to the kernel. A request passes through the two
  // one after the other, and on a small VM a wake-up on another vCPU costs
  // tens of microseconds (docs/threading.md, "Thread placement"). Start fails
  // with InvalidArgument for a CPU the process may not run on.
  int io_cpu = -1;
};

class Van {
 public:
  using MessageHandler = std::function<void(Message&&)>;
  using TickHandler = std::function<void()>;

  // `metrics` must outlive the Van.
  Van(VanOptions options, MetricsRegistry* metrics);
  virtual ~Van() = default;
  Van(const Van&) = delete;
  Van& operator=(const Van&) = delete;

  // Binds and starts the receive thread. Returns Unavailable naming the port
  // when it is in use. `on_message` gets every validated message; `on_tick`
  // runs every tick_interval. Both run on the receive thread.
  virtual absl::Status Start(MessageHandler on_message,
                             TickHandler on_tick) = 0;
  // Stops the thread and closes connections; idempotent.
  virtual void Stop() = 0;
  // The bound port. REQUIRES: Start() succeeded.
  virtual int port() const = 0;
  // Routes messages for `node.id()` to node.host():node.port() and, when
  // node.transport_id() is set, accepts messages from that identity as
  // sender node.id(). Replaces an earlier route to another address.
  virtual void Connect(const pb::Node& node) = 0;
  // Called once per node whose connection this van watches was lost (see
  // WatchConnections), with the node's id and the reason (e.g.
  // "connection closed"). Runs on the receive thread, from the tick.
  using ConnectionLostHandler =
      std::function<void(int node_id, const std::string& reason)>;
  // Watches this van's connections to its peers (those made by Connect)
  // and calls `handler` once for every node whose established connection
  // closed and did not come back within `grace` (van/connection_watch.h
  // says why a grace). ZmqVan does (ZeroMQ socket monitor events); vans
  // without connections ignore it. REQUIRES: before Start; grace > 0.
  virtual void WatchConnections(absl::Duration grace,
                                ConnectionLostHandler handler) {
    (void)grace;
    (void)handler;
  }
  // The cluster declared node `node_id` dead: messages still queued for it
  // are dropped when the van stops, rather than held for the linger time
  // (ZmqVan: 2 s), so a node whose job failed exits at once. Thread-safe.
  virtual void MarkPeerDead(int node_id) { (void)node_id; }
  // The node is stopping because its job failed or a signal came: what is
  // still queued for any peer when the van stops gets a short linger
  // (ZmqVan: 200 ms) instead of 2 s, so a peer that is gone but was not
  // declared dead (a killed scheduler) does not hold up the exit.
  // Thread-safe.
  virtual void ShortenLingerAtStop() {}
  // Sends `msg` to msg.meta.recipient(). Returns FailedPrecondition before
  // Start or after Stop. Delivery failures later are counted and logged.
  virtual absl::Status Send(Message msg) = 0;
  // Waits, with `*mu` held, until `done` holds or `deadline` passes; true
  // once it holds. `done` reads state guarded by `*mu` that a message
  // handler changes (a Customer's pending requests). Where the van allows
  // it (ZmqVan), the waiting thread meanwhile receives and dispatches the
  // node's messages itself, handlers included, so its answer needs no
  // hand-off from the receive thread; otherwise it waits on `*mu` while
  // the receive thread delivers. See docs/threading.md. REQUIRES: not
  // called from a handler (it would wait for itself until `deadline`).
  bool AwaitResponse(absl::Mutex* mu, const absl::Condition& done,
                     absl::Time deadline) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);

  // Count this node's requests that await answers, from opening to
  // completion (Customer calls them). A request whose wait timed out stays
  // counted until its answer comes, if ever: the van then lends its
  // receiving less, which only costs speed.
  void RequestOpened() {
    open_requests_.fetch_add(1, std::memory_order_relaxed);
  }
  void RequestClosed() {
    open_requests_.fetch_sub(1, std::memory_order_relaxed);
  }
  // Whether this node serves requests, and so may get messages at any time
  // (servers, the scheduler). Default true; the Postoffice sets it before
  // Start.
  void set_serves_requests(bool v) { serves_requests_.store(v); }
  // How many requests of this node await answers, or -1 when it serves
  // requests. A thread borrows the receiving in AwaitResponse only while
  // at most one is pending (its own: with more in flight, as in a
  // pipelined trainer, the receive thread delivers them all anyway and
  // lending it out would only cost wake-ups). When a borrower ends with
  // none pending, the receive thread resumes within about a millisecond
  // instead of at once, so a thread that waits for one request after
  // another finds the receiving free and wakes nobody.
  int64_t pending_requests() const {
    return serves_requests_.load(std::memory_order_relaxed)
               ? -1
               : open_requests_.load(std::memory_order_relaxed);
  }

  // This node's transport identity, sent with every message.
  const std::string& transport_id() const { return transport_id_; }
  void set_my_id(int id) { my_id_.store(id); }
  int my_id() const { return my_id_.load(); }
  void set_is_scheduler(bool v) { is_scheduler_.store(v); }
  // While set, a join reply from an unknown connection that names this
  // node is accepted (a restarted scheduler answering this node's rejoin;
  // see DecodeContext::rejoining). The Postoffice sets it while it has lost
  // the scheduler.
  void set_rejoining(bool v) { rejoining_.store(v); }
  bool is_scheduler() const { return is_scheduler_.load(); }
  const VanOptions& options() const { return options_; }
  MetricsRegistry* metrics() const { return metrics_; }
  // Counts a message dropped for `reason` in
  // petrel_van_messages_rejected_total and logs it, rate limited. Public
  // for the layers above, which check what the van cannot (the KV layout);
  // thread-safe.
  void CountDrop(absl::string_view reason, absl::string_view detail);
  // The scheduler accepted the join of the node with `transport_id`: its
  // connections get a member's memory budget (security/peer_registry.h) before
  // the node table binds its id. Changes no addressing rule. Thread-safe.
  void AdmitIdentity(const std::string& transport_id);

 protected:
  // For a van that wraps another (FaultVan): presents the inner van's
  // `transport_id` instead of a new one, so peers recognise its messages.
  Van(VanOptions options, MetricsRegistry* metrics, std::string transport_id);

  // Validates frames received from connection `from` (authenticated as
  // `peer`), counts and logs a reject, and passes a good message to the
  // handler. Receive thread only.
  void Deliver(absl::string_view from, const Buffer& header,
               std::vector<Buffer> frames, const PeerAuth& peer = {});
  // AwaitResponse's lending: receives and dispatches messages on the
  // calling thread, exactly as the receive thread would, until `done()`
  // returns true, the van stops or `deadline` passes. Returns false at
  // once, having received nothing, when the van does not lend (the
  // default), another thread already borrows, the caller is a handler, or
  // more than one request is pending.
  virtual bool ReceiveUntil(const std::function<bool()>& done,
                            absl::Time deadline) {
    (void)done;
    (void)deadline;
    return false;
  }
  void BindIdentity(const std::string& transport_id, int id);
  // Whether connection `from` belongs to a member: an identity bound to a
  // node, or one AdmitIdentity admitted. Thread-safe.
  bool IsMemberConnection(absl::string_view from);
  void CountSent(size_t bytes);

  MessageHandler on_message_;
  TickHandler on_tick_;

 private:
  std::atomic<int64_t> open_requests_{0};
  std::atomic<bool> serves_requests_{true};
  int ExpectedSender(absl::string_view from);

  // A message from an unknown connection that arrived before this node had
  // an id. A peer that got the node table first may talk to this node
  // before this node's own copy arrived (they travel on different
  // connections); such messages are held and validated again once the id
  // is set. Receive thread only.
  struct Held {
    std::string from;
    Buffer header;
    std::vector<Buffer> frames;
    PeerAuth peer;
  };
  static constexpr size_t kMaxHeld = 1024;
  // Also bounded in bytes, so a peer cannot pin memory before the join.
  static constexpr size_t kMaxHeldBytes = size_t{64} << 20;
  std::vector<Held> held_;
  size_t held_bytes_ = 0;

  const VanOptions options_;
  MetricsRegistry* const metrics_;
  const std::string transport_id_;
  std::atomic<int> my_id_{kEmptyNodeId};
  std::atomic<bool> is_scheduler_{false};
  std::atomic<bool> rejoining_{false};
  absl::Mutex identity_mu_;
  absl::flat_hash_map<std::string, int> identity_to_id_
      ABSL_GUARDED_BY(identity_mu_);
  absl::flat_hash_set<std::string> admitted_ ABSL_GUARDED_BY(identity_mu_);
  Counter* received_;
  Counter* received_bytes_;
  Counter* sent_;
  Counter* sent_bytes_;
};

// A random transport identity ("p" + 16 hex digits).
std::string NewTransportId();

}  // namespace petrel

#endif  // PETREL_VAN_VAN_H_
