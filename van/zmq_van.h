// ZmqVan: the TCP transport over ZeroMQ. One ROUTER socket receives from all
// peers; one DEALER per peer sends to it, with this node's transport identity
// as its routing id. Data frames travel without copying in both directions
// (zmq_msg_init_data on send; the received zmq_msg_t is owned by a Buffer).
//
// The DEALERs above are used only by the van's I/O thread: Send from it
// (handlers replying) goes straight to the socket, so a request/response
// costs no extra thread hand-off on the server. The ROUTER is used by the
// I/O thread too, except while an application thread waiting for a
// response borrows it (Van::AwaitResponse): the waiter then receives its answer
// itself instead of being woken by the I/O thread, which saves a thread
// wake-up per round trip. The hand-over is under a mutex (the full memory
// barrier ZeroMQ asks for when a socket changes threads). Another
// thread sends on DEALERs of its own (ZmqThreadSockets, routing id
// "<transport id>#<n>"), also without a hand-off; Connect from another
// thread is queued for the I/O thread, which an eventfd wakes. Sends never
// block on the network (ZMQ_DONTWAIT, no high-water mark). With
// WatchConnections, every I/O-thread DEALER is monitored (ZeroMQ socket
// monitor events, read on the tick; zmq_van_watch.cc).
//
// Thread safety: as Van. See docs/threading.md.
#ifndef PETREL_VAN_ZMQ_VAN_H_
#define PETREL_VAN_ZMQ_VAN_H_

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "security/connection_guard.h"
#include "security/zap_handler.h"
#include "van/connection_watch.h"
#include "van/van.h"
#include "van/zmq_sockets.h"

namespace petrel {

class ZmqVan : public Van {
 public:
  ZmqVan(VanOptions options, MetricsRegistry* metrics);
  ~ZmqVan() override;

  absl::Status Start(MessageHandler on_message, TickHandler on_tick) override;
  void Stop() override;
  // Thread-safe: 0 until Start bound the port.
  int port() const override { return port_.load(); }
  void Connect(const pb::Node& node) override;
  absl::Status Send(Message msg) override;
  void WatchConnections(absl::Duration grace,
                        ConnectionLostHandler handler) override;
  void MarkPeerDead(int node_id) override;
  void ShortenLingerAtStop() override { short_linger_ = true; }
  // The lending step of AwaitResponse (see Van::ReceiveUntil); public so
  // that tests can check when it lends.
  bool ReceiveUntil(const std::function<bool()>& done,
                    absl::Time deadline) override;

 private:
  struct Peer {
    void* socket = nullptr;
    std::string address;
  };

  // This thread's sockets, made on first use. Null once the van stops.
  std::shared_ptr<ZmqThreadSockets> ThisThreadSockets()
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(direct_mu_);
  void CloseThreadSockets();
  bool OnIoThread() const {
    return std::this_thread::get_id() == io_thread_id_.load();
  }
  // The CURVE public key to expect of `node`: its own, or for the
  // scheduler the configured one. Empty when CURVE is off.
  std::string PeerKey(const pb::Node& node) const;
  // With CURVE: makes the ROUTER a CURVE server and starts the ZAP
  // handler. Without: warns once that the node is open.
  absl::Status SetUpSecurity();
  // Start's steps. Creates the context and the ROUTER socket with its
  // options and security (CURVE, ZAP).
  absl::Status OpenRouter();
  // Binds the ROUTER to options().port (0: a free one) and reads the port.
  absl::Status BindRouter();
  // Starts the ConnectionGuard on the ROUTER's socket monitor.
  absl::Status StartGuard();
  // Queues a Connect for the I/O thread and wakes it.
  absl::Status EnqueueConnect(const pb::Node& node);
  void DrainQueue();
  void IoLoop();
  // Takes the ROUTER for the I/O thread; false while an application thread
  // has it or it was given back lazily.
  bool AcquireRouter();
  void ReleaseRouter();
  // The lazy-resume timer fired: take the ROUTER back if it has been idle
  // for kLazyResume, else wait for the rest of that time.
  void ResumeAfterTimer();
  void ArmResumeTimer(absl::Duration after)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(receive_mu_);
  void RunTickIfDue(absl::Time* next_tick);
  void Wake();
  void ReceiveAvailable();
  // Receives and delivers one message; false when none was queued.
  bool ReceiveOne();
  // One message as ReadFrames took it off the ROUTER: the sender's
  // transport id, its connection's CURVE key and roles, its frames (the
  // header first; at most max_frames, or too_many), whether it is split
  // (frame_split.h), and its connection and cost there.
  struct Received {
    std::string from;
    PeerAuth peer;
    std::vector<Buffer> frames;
    bool too_many = false;
    bool split = false;
    int fd = -1;             // the connection it came on (ZMQ_SRCFD)
    int64_t wire_bytes = 0;  // what it cost on that connection
  };
  enum class ReadResult { kNothing, kFailed, kRead };
  // Reads the frames of the next queued message: kNothing when none is
  // queued, kFailed when the receive failed (counted).
  ReadResult ReadFrames(Received* r);
  // The Do* functions and ReleaseSocket run on the I/O thread only.
  void DoConnect(const pb::Node& node);
  // Closes `socket` unless a peer in peers_ still uses it.
  void ReleaseSocket(void* socket);
  void DoSend(int recipient, const std::vector<Buffer>& frames);
  void CloseSockets();
  // Connection watching (I/O thread only). A new DEALER's monitor
  // endpoint, or null when not watching.
  std::string NextMonitorEndpoint();
  void AddMonitor(void* dealer, const std::string& endpoint,
                  const std::string& address);
  void RemoveMonitor(void* dealer);
  // Feeds the queued monitor events to watch_ and reports lost nodes.
  // REQUIRES: handler_mu_ held (it calls the handler).
  void CheckConnections();

  void* context_ = nullptr;
  void* router_ = nullptr;
  // Authenticates the ROUTER's peers when CURVE is on; null otherwise.
  std::unique_ptr<ZapHandler> zap_;
  // Holds the ROUTER's peers to options().peers; stopped before the
  // context ends.
  std::unique_ptr<ConnectionGuard> guard_;
  int wake_fd_ = -1;    // wakes the I/O thread
  int stop_fd_ = -1;    // readable once Stop began (borrowers poll it)
  int resume_fd_ = -1;  // timerfd: ends a lazy hand-back
  std::atomic<int> port_{0};
  std::thread io_thread_;
  std::atomic<bool> running_{false};
  std::atomic<bool> stop_{false};
  std::atomic<std::thread::id> io_thread_id_{};
  // Owned by the I/O thread. Ids reached at the same address share one
  // DEALER socket.
  absl::flat_hash_map<int, Peer> peers_;
  // Set by WatchConnections before Start; then read by the I/O thread.
  absl::Duration watch_grace_ = absl::ZeroDuration();
  ConnectionLostHandler on_connection_lost_;
  // Owned by the I/O thread, when watching: the watch, and each DEALER's
  // monitor (a PAIR socket reading its events) and peer address.
  std::unique_ptr<ConnectionWatch> watch_;
  struct Monitor {
    void* pair = nullptr;
    std::string address;
  };
  absl::flat_hash_map<void*, Monitor> monitors_;
  int next_monitor_ = 0;

  // Every ZmqVan's number, so a thread's socket table never mistakes a
  // new van for a destroyed one at the same address.
  const uint64_t instance_;
  absl::Mutex direct_mu_;
  bool direct_open_ ABSL_GUARDED_BY(direct_mu_) = false;
  // Peer addresses by node id, for other threads' sockets.
  absl::flat_hash_map<int, std::string> addresses_ ABSL_GUARDED_BY(direct_mu_);
  // Their CURVE public keys by node id (CURVE on only).
  absl::flat_hash_map<int, std::string> peer_keys_ ABSL_GUARDED_BY(direct_mu_);
  // Addresses of peers declared dead (MarkPeerDead): what is queued for
  // them is dropped at Stop.
  absl::flat_hash_set<std::string> dead_addresses_ ABSL_GUARDED_BY(direct_mu_);
  std::atomic<bool> short_linger_{false};  // ShortenLingerAtStop
  std::vector<std::shared_ptr<ZmqThreadSockets>> thread_sockets_
      ABSL_GUARDED_BY(direct_mu_);

  // Who receives from the ROUTER: the I/O thread, or an application thread
  // waiting in AwaitResponse (`borrowed_`), never both.
  absl::Mutex receive_mu_;
  bool borrowed_ ABSL_GUARDED_BY(receive_mu_) = false;
  bool io_receiving_ ABSL_GUARDED_BY(receive_mu_) = false;
  // The last borrower had no request pending: the I/O thread takes the
  // ROUTER back when resume_fd_ fires (after kLazyResume) rather than at
  // once, unless a borrower came first.
  bool lazy_resume_ ABSL_GUARDED_BY(receive_mu_) = false;
  absl::Time lazy_since_ ABSL_GUARDED_BY(receive_mu_);
  bool resume_armed_ ABSL_GUARDED_BY(receive_mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(receive_mu_) = false;
  // Held while a handler or the tick runs, so they run one at a time
  // whichever thread receives.
  absl::Mutex handler_mu_;

  absl::Mutex queue_mu_;
  std::vector<pb::Node> connects_ ABSL_GUARDED_BY(queue_mu_);
  bool wake_pending_ ABSL_GUARDED_BY(queue_mu_) = false;
};

}  // namespace petrel

#endif  // PETREL_VAN_ZMQ_VAN_H_
