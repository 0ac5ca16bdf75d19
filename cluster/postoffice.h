// Postoffice: one node's view of the cluster. It owns the node's Van, joins
// the cluster through the scheduler, holds the node table, groups and the
// key-range map, runs barriers and heartbeats, routes data messages to
// Customers and learns when the job terminates. It is an ordinary object:
// build it in main and pass it down; several may live in one process.
//
// The scheduler's own logic (admitting nodes, counting barriers, watching
// heartbeats) lives in scheduler/ and plugs in through set_control_handler.
//
// Thread safety: thread-safe unless noted; handlers run one at a time. See
// docs/threading.md.
#ifndef PETREL_CLUSTER_POSTOFFICE_H_
#define PETREL_CLUSTER_POSTOFFICE_H_

#include <atomic>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

#include "base/metrics.h"
#include "cluster/key_range_map.h"
#include "cluster/local_mailbox.h"
#include "cluster/map_hold.h"
#include "cluster/replica_map.h"
#include "cluster/scheduler_watch.h"
#include "van/message.h"
#include "van/van.h"

namespace petrel {

class Customer;

// Fills `stats` (sent with each heartbeat) from this node's metrics: its
// completed push/pull requests (petrel_{server,worker}_request_seconds)
// and its tables (petrel_table_keys, petrel_table_memory_bytes).
void FillNodeStats(const MetricsRegistry& metrics, pb::NodeStats* stats);

struct PostofficeOptions {
  pb::Role role = pb::ROLE_UNSPECIFIED;
  // Scheduler address. Ignored by the scheduler itself.
  std::string scheduler_host = "127.0.0.1";
  int scheduler_port = 0;
  // Address peers use to reach this node; empty: the address this host uses
  // to reach the scheduler.
  std::string advertise_host;
  // Port peers use to reach this node (a forwarded port, a proxy's); 0:
  // the bound port. Default 0.
  int advertise_port = 0;
  int num_servers = 1;
  int num_workers = 1;
  // num_servers / num_workers were given explicitly (a flag, DMLC_NUM_*, a
  // job config), not defaults: the node tells the scheduler, which refuses
  // the join (InvalidArgument from Start) when its own differ. Default
  // false: the scheduler's counts are taken as they are.
  bool num_servers_given = false;
  bool num_workers_given = false;
  // Rank to ask for; -1: any (join order decides).
  int requested_rank = -1;
  // A server that joins a running replicated job as one more server
  // (docs/failures.md, "Elastic servers"). Default false.
  bool add_server = false;
  // Shared secret every join must present. Default empty.
  std::string auth_token;
  // How long Start waits for the node table. Default 60 s.
  absl::Duration join_timeout = absl::Seconds(60);
  // Heartbeat period to the scheduler. Default 1 s; zero disables (and
  // with it the watch on the scheduler below).
  absl::Duration heartbeat_interval = absl::Seconds(1);
  // The scheduler answers heartbeats; after three intervals without a word
  // from it the node counts it as lost, goes on with its work and asks to
  // rejoin (a scheduler restarted with --recover takes it back). Lost for
  // this long (since last heard), the node stops: its waits on the
  // scheduler end with Unavailable("scheduler HOST:PORT unreachable for
  // N s; stopping"). Default 60 s; > 0. See docs/failures.md.
  absl::Duration scheduler_grace = absl::Seconds(60);
};

class Postoffice {
 public:
  // Called with every control message (scheduler only). Van thread.
  using ControlHandler = std::function<void(Message&&)>;
  // Called on every van tick (scheduler only). Van thread.
  using TickHook = std::function<void(absl::Time now)>;

  // `metrics` must outlive the Postoffice.
  Postoffice(PostofficeOptions options, std::unique_ptr<Van> van,
             MetricsRegistry* metrics);
  ~Postoffice();
  Postoffice(const Postoffice&) = delete;
  Postoffice& operator=(const Postoffice&) = delete;

  // Scheduler only, before Start.
  void set_control_handler(ControlHandler h) {
    control_handler_ = std::move(h);
  }
  void set_tick_hook(TickHook h) { tick_hook_ = std::move(h); }

  // Starts the van. A scheduler returns once bound. Any other node then
  // joins and returns once the node table arrived: DeadlineExceeded naming
  // the scheduler address when nothing answered within join_timeout,
  // PermissionDenied/InvalidArgument with the scheduler's reason when it
  // refused the join, Unavailable when the port is taken.
  absl::Status Start();
  // Stops the van; idempotent.
  void Stop();

  // Sends `msg` with this node as sender.
  absl::Status Send(Message msg);
  // Blocks until every node of `group` reached the barrier.
  absl::Status Barrier(int group, absl::Duration timeout);
  // Worker: reports that this worker finished and waits for the scheduler's
  // TERMINATE. Other roles: waits for TERMINATE. Returns OK for a clean end,
  // Aborted with the reason when the job failed or Interrupt was called.
  absl::Status Finish(absl::Duration timeout);
  absl::Status WaitForTerminate(absl::Duration timeout);
  // Wakes Finish/WaitForTerminate/Barrier with Aborted(reason) (signals)
  // and abandons every pending request (see AbandonRequests).
  void Interrupt(const std::string& reason);

  // OK when no node of `ids` was declared dead and requests were not
  // abandoned; else Unavailable with the scheduler's reason for the first
  // dead one ("node 8 (server 0 at host:port) died: connection closed"),
  // also after the job failed since, or else the status requests were
  // abandoned with. Cheap while nobody died.
  absl::Status CheckAlive(const std::vector<int>& ids) const;

  // Registers `customer` for responses to its requests and, when
  // `handles_requests`, as the one that handles requests to its app.
  // AlreadyExists when either place is taken. RemoveCustomer returns once
  // no handler or tick of `customer` runs on the van thread any more.
  // REQUIRES for Remove: not called from a handler.
  absl::Status AddCustomer(Customer* customer, bool handles_requests);
  void RemoveCustomer(Customer* customer);

  pb::Role role() const { return options_.role; }
  bool is_scheduler() const { return options_.role == pb::ROLE_SCHEDULER; }
  bool is_server() const { return options_.role == pb::ROLE_SERVER; }
  bool is_worker() const { return options_.role == pb::ROLE_WORKER; }
  int my_id() const { return van_->my_id(); }
  int my_rank() const;
  // The job's server and worker counts: the options' until the node table
  // arrives, then the table's (the scheduler's counts are authoritative).
  int num_servers() const;
  int num_workers() const;
  int port() const { return van_->port(); }
  // The advertised host (resolved by Start).
  std::string advertise_host() const;
  const PostofficeOptions& options() const { return options_; }
  Van* van() const { return van_.get(); }
  MetricsRegistry* metrics() const { return metrics_; }
  // Node ids in `id`: itself for a node id, the members of a group id.
  std::vector<int> GetNodeIds(int id) const;
  // The key-range map. REQUIRES: Start() succeeded (not the scheduler's,
  // which sets it with SetCluster).
  KeyRangeMap key_ranges() const;
  std::vector<pb::Node> nodes() const;
  // The replicated view of the key ranges (cluster/replica_map.h): replicas 1
  // and version 0 when the job does not replicate. REQUIRES: Start()
  // succeeded. map_version() is cheap (no lock): it changes when a server
  // failed over.
  ReplicaMap replica_map() const;
  uint64_t map_version() const {
    return map_version_.load(std::memory_order_acquire);
  }

  // Scheduler: installs the node table it assigned and connects to every
  // node (itself included, so it can take part in barriers).
  void SetCluster(const std::vector<pb::Node>& nodes,
                  const KeyRangeMap& ranges);
  // This node as it presents itself when joining.
  pb::Node SelfNode() const;

 private:
  // An ADD_NODE request to the scheduler naming this node (a join, or a
  // rejoin, which adds its rank and map).
  Message JoinRequest() const;
  void HandleMessage(Message&& msg);
  void HandleControl(Message&& msg);
  // Hands a data message to its customer (fencing, customer lookup).
  void DispatchData(Message&& msg);
  // A server holds a worker's request sliced by a newer key-range map than
  // its own until that map arrives, so that it forwards the request by the
  // map its sender used (cluster/map_hold.h; docs/failures.md, "The order in
  // which nodes learn a map"). True when `msg` was taken.
  bool HoldIfAheadOfMap(Message& msg, absl::Time now);
  // Dispatches the held requests that the map now covers, or that waited
  // longer than kMaxMapHold, in the order they came (van thread).
  void ReleaseHeldRequests(absl::Time now);
  void HandleJoinReply(const pb::Control& control);
  // COMMAND_REJECT of this node's join: Start returns the reason.
  void HandleJoinRefused(const pb::Control& control);
  // The scheduler's answer to this node's CAUGHT_UP (SendCaughtUp).
  void HandleCaughtUpAnswer(const pb::Control& control);
  // COMMAND_NODE_DEAD: remembers the node as dead and fails the
  // customers' requests waiting for it.
  void HandleNodeDead(const pb::Control& control);
  // A NODE_DEAD that carries the next replica map (the dead server's
  // ranges went to `control.successor()`): installs the map; each
  // customer's requests to the dead server continue on the successor
  // (Customer::FailOver) instead of failing. False when the map is
  // malformed (then the requests fail as for any dead node).
  bool InstallFailoverMap(int dead, const pb::Control& control);
  // COMMAND_NODE_BACK (postoffice_membership.cc): a replacement server
  // took a dead one's id; with a map, it is a replica again.
  void HandleNodeBack(const pb::Control& control);
  // Installs the replicated map in `control` when it is newer than this
  // node's; false when it is unusable.
  bool InstallNewerMap(const pb::Control& control)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Routes by `map` from now on and reports its version in the metrics.
  void SetReplicaMap(ReplicaMap map) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

 public:
  // A replacement or added server tells the scheduler it holds its copy of
  // every range, made against key-range map `version` (COMMAND_CAUGHT_UP),
  // and waits up to `timeout` for the answer: OK when it is a replica,
  // Unavailable with the scheduler's reason when it refused (a source of
  // the copies died since that map), DeadlineExceeded without an answer.
  absl::Status SendCaughtUp(uint64_t version, absl::Duration timeout);
  // Elastic servers (postoffice_membership.cc). A server added to a running
  // job: one more server in the table and the ring (the scheduler's, and a
  // node's on NODE_BACK of an unknown server id).
  void AddServer(const pb::Node& node);
  // Whether this server joined a running job as an added server (its join
  // reply's map is the one in which it holds its share, still to copy).
  bool joined_as_added() const;
  // Draining a server: the ranges a DRAIN_COPY asks this server to copy,
  // as (source rank, ranges) pairs ascending by source. The hook runs on
  // the van thread and must not block (it hands the copy to a thread,
  // which sends CAUGHT_UP when done). Set before Start.
  using DrainCopyHook = std::function<void(
      std::vector<std::pair<int, std::vector<int>>> sources)>;
  void set_drain_copy_hook(DrainCopyHook hook) {
    drain_copy_hook_ = std::move(hook);
  }
  // A request is routed by the key-range map (a worker slices it, a
  // primary picks the backups a push goes to) a moment before its customer
  // registers it (Customer::NewRequest). Held from before the map is read
  // until the request is registered, a RoutingScope keeps this node from
  // answering a DRAIN_QUERY meanwhile: a request routed by the map before
  // the drain may still be on its way to the drained server, and its
  // customer does not know it yet. Cheap (one atomic counter).
  class RoutingScope {
   public:
    explicit RoutingScope(Postoffice* po) : po_(po) {
      po_->routing_.fetch_add(1, std::memory_order_seq_cst);
      // Orders the increment before the map's read (HandleDrainQuery
      // reads them the other way round, fenced likewise).
      std::atomic_thread_fence(std::memory_order_seq_cst);
    }
    ~RoutingScope() { po_->routing_.fetch_sub(1, std::memory_order_release); }
    RoutingScope(const RoutingScope&) = delete;
    RoutingScope& operator=(const RoutingScope&) = delete;

   private:
    Postoffice* const po_;
  };

 private:
  // COMMAND_DRAIN_COPY and COMMAND_DRAIN_QUERY (postoffice_membership.cc).
  void HandleDrainCopy(const pb::Control& control);
  void HandleDrainQuery(const pb::Control& control);

 public:
  // Whether server node `id` was drained out of the job as far as this
  // node knows (it answered the drain's last DRAIN_QUERY): it is sent no
  // clock. Call inside a RoutingScope.
  bool Retired(int id) const;

 private:
  // Calls `fail` on every customer (van thread).
  void ForEachCustomer(const std::function<void(Customer*)>& fail);
  // Nothing will answer any more (the job failed, a signal, the van
  // stopped): every pending request of every customer fails with
  // `status` (their resends stop), and so does every request opened
  // later. Logs the number abandoned, once. Any thread but a handler's.
  void AbandonRequests(const absl::Status& status);
  void OnTick();
  absl::Status Join();
  // The watch on the scheduler (postoffice_membership.cc). Van thread.
  // Acts on the watch's verdict: logs a loss, asks to rejoin, gives up.
  void OnSchedulerWatch(SchedulerWatch::Action action, absl::Time now);
  // Asks the scheduler to take this node back, with its id, rank, address
  // and the key-range map.
  void SendRejoin();
  // The scheduler answered a rejoin (ADD_NODE listing the scheduler's own
  // node and this node's): binds its (maybe new) identity, ends the loss and
  // sends again what the scheduler may have missed: unfinished barriers,
  // WORKER_DONE.
  void HandleRejoinReply(const pb::Control& control);
  // The scheduler refused the rejoin: the node stops with its reason.
  void HandleRejoinRefused(const pb::Control& control);
  // Ends every wait of this node with `status` (a failed job).
  void Terminate(const absl::Status& status);
  std::string SchedulerAddress() const;
  absl::Status ResolveAdvertiseHost();

  const PostofficeOptions options_;
  std::unique_ptr<Van> van_;
  // Messages to this node itself (Send); handled as if received.
  LocalMailbox local_{[this](Message&& msg) { HandleMessage(std::move(msg)); }};
  MetricsRegistry* const metrics_;
  ControlHandler control_handler_;
  TickHook tick_hook_;
  DrainCopyHook drain_copy_hook_;
  absl::Time last_heartbeat_;  // van thread only
  // Van thread only (deliveries and ticks are serialised by the van).
  MapHold map_hold_;
  bool started_ = false;

  // Held by the van thread while it calls into customers (Accept, Tick), so
  // that RemoveCustomer can wait until no such call is running.
  absl::Mutex dispatch_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  mutable absl::Mutex mu_;
  std::string advertise_host_ ABSL_GUARDED_BY(mu_);
  std::vector<pb::Node> nodes_ ABSL_GUARDED_BY(mu_);
  int my_rank_ ABSL_GUARDED_BY(mu_) = -1;
  int num_servers_ ABSL_GUARDED_BY(mu_);
  int num_workers_ ABSL_GUARDED_BY(mu_);
  std::optional<KeyRangeMap> ranges_ ABSL_GUARDED_BY(mu_);
  std::optional<ReplicaMap> replica_map_ ABSL_GUARDED_BY(mu_);
  std::atomic<uint64_t> map_version_{0};
  // Requests being routed now (RoutingScope).
  std::atomic<int> routing_{0};
  // Drained servers this node sends nothing more (Retired).
  absl::flat_hash_set<int> retired_ ABSL_GUARDED_BY(mu_);
  bool joined_ ABSL_GUARDED_BY(mu_) = false;
  bool joined_as_added_ ABSL_GUARDED_BY(mu_) = false;
  // The scheduler's answer to this node's CAUGHT_UP (empty: none yet).
  std::optional<absl::Status> caught_up_answer_ ABSL_GUARDED_BY(mu_);
  // Appends an unknown server to nodes_ and grows num_servers_; false when
  // the id is known.
  bool AddServerLocked(const pb::Node& node) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool join_acked_ ABSL_GUARDED_BY(mu_) = false;
  SchedulerWatch scheduler_watch_ ABSL_GUARDED_BY(mu_);
  // This worker reported WORKER_DONE (sent again after a rejoin).
  bool worker_done_sent_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<absl::Status> join_error_ ABSL_GUARDED_BY(mu_);
  std::optional<absl::Status> terminated_ ABSL_GUARDED_BY(mu_);
  // Nodes the scheduler declared dead, with the reason as a status.
  absl::flat_hash_map<int, absl::Status> dead_ ABSL_GUARDED_BY(mu_);
  // Set by AbandonRequests: why requests fail at once from then on.
  std::optional<absl::Status> abandoned_ ABSL_GUARDED_BY(mu_);
  // !dead_.empty() || abandoned_, read without mu_.
  std::atomic<bool> any_dead_{false};
  absl::flat_hash_map<int, uint64_t> barrier_sent_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<int, uint64_t> barrier_done_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint64_t, Customer*> customers_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<int, Customer*> request_handlers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace petrel

#endif  // PETREL_CLUSTER_POSTOFFICE_H_
