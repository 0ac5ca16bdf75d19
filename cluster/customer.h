// Customer: request tracking and dispatch for one application object (a
// KVWorker, KVServer or SimpleApp). It gives each request a timestamp,
// stamps every message to a recipient with a per-recipient sequence number,
// resends unanswered requests, recognises duplicate requests and responses,
// and lets callers wait for completion with a deadline.
//
// Requests reach the handler in the order their sender's customer
// numbered them, whatever order they arrived in (different threads of a
// sender use different connections; resends and faults reorder): one that
// arrives ahead of a missing sequence number is held until the gap fills,
// for at most max_reorder_wait and within bounded memory, after which the
// gap is skipped and logged.
//
// Thread safety: thread-safe; handlers and callbacks run one at a time, on
// the van's receive thread or a waiting thread. See docs/threading.md.
#ifndef PETREL_CLUSTER_CUSTOMER_H_
#define PETREL_CLUSTER_CUSTOMER_H_

#include <atomic>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

#include "base/metrics.h"
#include "cluster/key_range_map.h"
#include "van/message.h"

namespace petrel {

class Postoffice;

// Where the answer to a request goes: the requesting node and customer,
// and the request's timestamp and part (see ReplyAddressOf).
struct ReplyAddress {
  int sender = 0;
  int customer_id = 0;
  int timestamp = 0;
  int part = 0;
};

// The reply address of a received request.
inline ReplyAddress ReplyAddressOf(const pb::Meta& request) {
  return ReplyAddress{request.sender(), request.customer_id(),
                      request.timestamp(), request.part()};
}

struct CustomerOptions {
  // Resend a request not answered within this long; zero disables resends.
  // Each further resend of the same request waits twice as long as the one
  // before, up to max_resend_interval. Default 1 s: TCP delivers, but a
  // connection that drops and reconnects loses what was in flight on it;
  // sequence numbers make a resend safe (a duplicate is acknowledged, not
  // applied again). See docs/failures.md.
  absl::Duration resend_timeout = absl::Seconds(1);
  // Longest wait between two resends of one request. Default 8 s.
  absl::Duration max_resend_interval = absl::Seconds(8);
  // A large request may be slow without being lost: each wait before a
  // resend grows by the request's bytes at this rate (so a 1 GiB push
  // waits 10 s more at the default). Default 100 MB/s; 0 = no growth.
  double resend_min_bytes_per_second = 100e6;
  // Give up resending after this many tries. Default 10.
  int max_resends = 10;
  // Longest a request that arrived ahead of a missing one is held for it.
  // Default 5 s.
  absl::Duration max_reorder_wait = absl::Seconds(5);
};

class Customer {
 public:
  // Called with each request; `duplicate` is true when this (sender, seq)
  // was seen before. Runs on the van thread.
  using RequestHandler = std::function<void(Message&& request, bool duplicate)>;
  // Called with the first response to each message (part) of a request,
  // before the request counts as complete. Runs on the van thread.
  using ResponseHandler = std::function<void(Message&& response)>;

  // `postoffice` must outlive the Customer.
  Customer(int app_id, int customer_id, Postoffice* postoffice,
           CustomerOptions options = {});
  ~Customer();
  Customer(const Customer&) = delete;
  Customer& operator=(const Customer&) = delete;

  // Set the handlers before Start(). Start registers with the Postoffice
  // (AlreadyExists if this app and customer id are taken).
  void set_request_handler(RequestHandler h) {
    request_handler_ = std::move(h);
  }
  void set_response_handler(ResponseHandler h) {
    response_handler_ = std::move(h);
  }
  absl::Status Start();
  void Stop();  // idempotent

  // Called with the timestamp once every response arrived, before Wait
  // returns for it. Runs on the van thread (or in NewRequest when there are
  // no recipients).
  using CompletionHandler = std::function<void(int timestamp)>;
  // Opens a request expecting one response to each message it will send:
  // one per entry of `recipients`. An id listed k times is sent the
  // request in k parts (messages), each answered separately.
  int NewRequest(const std::vector<int>& recipients,
                 CompletionHandler on_complete = nullptr);
  // Sends one message of request `msg.meta.timestamp()`; fills in app,
  // customer, sender, sequence number and part (0, 1, ... in the order the
  // parts to one recipient are sent), and keeps it for resending.
  absl::Status SendRequest(Message msg);
  // Sends `response` to the request at `to`; fills in the addressing
  // fields only (app, customer, request = false, timestamp, recipient,
  // part). The application fills in the rest of the header.
  absl::Status SendResponse(const ReplyAddress& to, Message response);
  // Waits until request `timestamp` completes. DeadlineExceeded names the
  // nodes that did not answer within `timeout`; the failure's status
  // (Unavailable naming a dead node, or the job's end) when it failed. The
  // waiting thread may receive for the van meanwhile (Van::AwaitResponse), so
  // handlers and callbacks of any request may run on it. REQUIRES: not called
  // from a handler or callback.
  absl::Status Wait(int timestamp,
                    absl::Duration timeout = absl::InfiniteDuration());
  bool IsComplete(int timestamp);

  int app_id() const { return app_id_; }
  int customer_id() const { return customer_id_; }
  Postoffice* postoffice() const { return postoffice_; }

  // Called by the Postoffice on the van thread.
  void Accept(Message&& msg);
  void Tick(absl::Time now);
  // Fails every pending request still waiting for an answer from node
  // `node_id` (declared dead), or every pending request (the job ended
  // as failed), with `status`: each completes at once (its completion
  // handler runs, on this thread; RequestFailure tells it the request
  // failed) and its Wait returns `status`. Later answers are ignored.
  // FailAll returns how many requests it failed.
  void FailRequestsTo(int node_id, const absl::Status& status);
  size_t FailAll(const absl::Status& status);
  // Whether a pending request still waits for an answer from `node_id`
  // (draining a server: docs/failures.md, "Elastic servers").
  bool HasPendingTo(int node_id);

  // Replicated servers (docs/failures.md): what becomes of a pending
  // message to a server that died while a replica took over its ranges.
  struct FailoverHooks {
    // Called (with this customer's lock held: must not lock or call back)
    // for each unanswered message to the dead node, with the node that
    // took over. Returns the node to send it to after editing `msg`
    // (recipient, part and seq are filled in here), 0 to count the message
    // as answered, or -1 to fail its request. Null: FailOver fails them.
    std::function<int(Message* msg, int successor)> reroute;
    // Called, without the lock, for each message rerouted, before it is
    // sent: (timestamp, old PartKey, new PartKey).
    std::function<void(int timestamp, uint64_t from, uint64_t to)> rerouted;
    // Optional. Called (with the lock held, like reroute) for each such
    // message, with the current key-range map: the pieces to send instead,
    // each addressed (recipient set) to the live node that now leads its
    // keys, since a dead node's ranges may have gone to several nodes and
    // the successor may hold or back none of some. A push's pieces name
    // its origin (the servers tell them apart by their key ranges). Empty:
    // `reroute` decides.
    std::function<std::vector<Message>(const Message& msg,
                                       const KeyRangeMap& ranges)>
        split;
    // Called, without the lock, before they are sent, for the pieces of
    // one split message: (timestamp, old PartKey, the pieces' PartKeys,
    // the pieces).
    std::function<void(int timestamp, uint64_t from,
                       const std::vector<uint64_t>& to,
                       const std::vector<Message>& pieces)>
        split_rerouted;
  };
  // Set before Start.
  void set_failover_hooks(FailoverHooks hooks) {
    failover_hooks_ = std::move(hooks);
  }
  // Node `dead` died and node `successor` took over its ranges: each
  // pending message to it goes where FailoverHooks::reroute (or split)
  // says (resent unsequenced: it carries its origin for duplicate
  // detection); without hooks, or for a message not kept for resending, its
  // request fails with `status` as FailRequestsTo does. The moved pushes
  // go at once; the other moved messages (pulls) only once every moved
  // push is answered, so that a pull reads the pushes this sender made
  // before it (a pull for clock t is sent before the push of clock t - 1,
  // and the successor may know clock t already; docs/failures.md).
  void FailOver(int dead, int successor, const absl::Status& status);
  // Node `id` came back as a new process (a replacement server): forgets
  // the sequence numbers to and from the old one and its failover
  // redirection.
  void ForgetPeer(int id);

  // Part numbers of messages moved by FailOver start here, apart from a
  // request's own parts to the node that took over.
  static constexpr int kReroutedPartBase = 1 << 24;
  // Identifies one message of a request: (recipient, part).
  static uint64_t PartKey(int node, int part) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(node)) << 32) |
           static_cast<uint32_t>(part);
  }
  // The failure of request `timestamp` while its completion handler runs;
  // OK for a request that did not fail.
  absl::Status RequestFailure(int timestamp);

 private:
  struct Pending {
    absl::flat_hash_set<uint64_t> waiting;        // PartKeys yet to answer
    absl::flat_hash_map<uint64_t, Message> sent;  // for resending
    absl::flat_hash_map<int, int> parts_sent;     // per recipient
    absl::Time last_sent;
    size_t bytes = 0;  // data bytes of the messages sent so far
    int resends = 0;
    int rerouted = 0;  // messages moved to another node (FailOver)
    // Moved messages not sent yet (FailOver holds them until the moved
    // pushes are answered): not resent meanwhile.
    absl::flat_hash_set<uint64_t> held_back;
    CompletionHandler on_complete;
    absl::Status failure;  // set when the request failed
  };
  // In-order delivery and duplicate detection for one sender customer's
  // sequence numbers.
  struct SeqWindow {
    uint64_t next = 1;                        // every seq below was handled
    absl::btree_map<uint64_t, Message> held;  // arrived ahead of `next`
    size_t held_bytes = 0;
    absl::Time gap_since;  // when the oldest wait for `next` began
  };
  // A request and whether it is a duplicate, ready for the handler.
  using Ready = std::vector<std::pair<Message, bool>>;

  void AcceptResponse(Message&& msg);
  // The requests `msg` makes ready, in order (none while it is held).
  Ready SequenceRequest(Message&& msg);
  // Moves the held requests that follow `w.next` without a gap to `out`.
  void ReleaseHeld(SeqWindow& w, absl::Time now, Ready* out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Gives up on the missing sequence numbers: moves everything held to
  // `out`, in order.
  void SkipGap(uint64_t stream, SeqWindow& w, Ready* out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Dispatch(Ready ready);
  // Moved messages waiting for moved pushes to be answered (FailOver).
  struct AfterPushes {
    std::vector<std::pair<int, uint64_t>> pushes;  // (timestamp, PartKey)
    std::vector<Message> msgs;
  };
  // Takes the messages of after_pushes_ whose pushes are all answered (or
  // failed).
  std::vector<Message> TakeReleased() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Sends messages TakeReleased took (without the lock).
  void SendReleased(std::vector<Message> msgs);
  // FailOver's steps. A message to the dead node moved whole (to.size() ==
  // 1, piece unset) or split into pieces (FailoverHooks::split).
  struct Moved {
    int timestamp;
    uint64_t from;
    std::vector<uint64_t> to;
    std::vector<Message> msgs;
    bool split = false;
  };
  // What MoveRequestsTo found: the messages moved, the requests to fail
  // (a message that cannot be moved), and the requests complete with
  // their handlers (everything they waited for went to the dead node).
  struct MovedRequests {
    std::vector<Moved> moved;
    absl::flat_hash_set<int> fail;
    std::vector<std::pair<int, CompletionHandler>> completed;
  };
  // Moves every unanswered message to dead node `dead` to `successor` or,
  // cut by `ranges` (when splitting), to the nodes that lead its keys now.
  MovedRequests MoveRequestsTo(int dead, int successor,
                               const std::optional<KeyRangeMap>& ranges)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Sends the moved messages of requests not failed: the pushes now, the
  // rest once the pushes are answered (after_pushes_). Logs what it sent.
  void SendMoved(int dead, int successor, MovedRequests& m);
  // Failover (customer_failover.cc). The live node that took over dead
  // node `id`'s ranges, following successive failovers; 0 when none.
  int MovedTo(int id) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Moves message `*msg` of request `p`, addressed to a dead node, to
  // `to` (see FailOver); returns its new PartKey.
  uint64_t Reroute(Pending& p, Message* msg, int to)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // What RerouteOnSend did with a message: moved whole (to[0]) or cut
  // into `pieces` (sent instead of it), each numbered in its recipient's
  // stream as a new message.
  struct MovedOnSend {
    bool moved = false;
    int timestamp = 0;
    uint64_t from = 0;
    std::vector<uint64_t> to;
    std::vector<Message> pieces;
  };
  // SendRequest of a message to a node that failed over: moves it first,
  // cut by `ranges` when the split hook is set and `ranges` given. Returns
  // false when it is not such a message.
  bool RerouteOnSend(Message* msg, const KeyRangeMap* ranges,
                     MovedOnSend* moved) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Fails the pending requests `fail` selects (see FailRequestsTo);
  // returns how many.
  size_t FailWhere(const std::function<bool(int, const Pending&)>& fail,
                   const absl::Status& status);
  // The wait before resend number `resends` + 1 of a request of `bytes`.
  absl::Duration ResendInterval(int resends, size_t bytes) const;

  const int app_id_;
  const int customer_id_;
  Postoffice* const postoffice_;
  const CustomerOptions options_;
  RequestHandler request_handler_;
  ResponseHandler response_handler_;
  FailoverHooks failover_hooks_;
  bool started_ = false;
  // petrel_customer_resent_total and petrel_customer_duplicates_total;
  // set by Start (null before).
  Counter* resent_ = nullptr;
  Counter* duplicates_ = nullptr;

  absl::Mutex mu_;
  int next_timestamp_ ABSL_GUARDED_BY(mu_) = 0;
  absl::btree_map<int, Pending> pending_ ABSL_GUARDED_BY(mu_);
  // Failed requests, by timestamp, for Wait (which may ask again); the
  // oldest go past kMaxFailures.
  absl::btree_map<int, absl::Status> failures_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<int, uint64_t> next_seq_ ABSL_GUARDED_BY(mu_);
  std::vector<AfterPushes> after_pushes_ ABSL_GUARDED_BY(mu_);
  // Dead node -> the node that took over its ranges (FailOver).
  absl::flat_hash_map<int, int> moved_to_ ABSL_GUARDED_BY(mu_);
  // Set (for good) once moved_to_ had an entry: SendRequest then reads the
  // map before its lock, for RerouteOnSend's cut.
  std::atomic<bool> any_moved_{false};
  // Keyed by (sender node, sending customer).
  absl::flat_hash_map<uint64_t, SeqWindow> seen_ ABSL_GUARDED_BY(mu_);
  size_t held_bytes_ ABSL_GUARDED_BY(mu_) = 0;  // over all windows
};

}  // namespace petrel

#endif  // PETREL_CLUSTER_CUSTOMER_H_
