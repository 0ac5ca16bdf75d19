// Scheduler: the control plane of a Petrel job. It admits nodes (checking
// the auth token, role counts and requested ranks), assigns ids and ranks in
// a deterministic order (requested rank, else join order), broadcasts the
// node table and key-range map, counts barriers, watches heartbeats, and
// terminates the job when every worker has finished.
//
// Thread safety: Run, Interrupt and the accessors are thread-safe; the
// message handlers run on the Postoffice's van thread.
#ifndef PETREL_SCHEDULER_SCHEDULER_H_
#define PETREL_SCHEDULER_SCHEDULER_H_

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

#include "cluster/postoffice.h"
#include "scheduler/admin_channel.h"
#include "scheduler/membership_controller.h"

namespace petrel {

struct SchedulerOptions {
  // Shared secret joining nodes must present. Default empty.
  std::string auth_token;
  // How long to wait for every expected node. Default 60 s.
  absl::Duration join_timeout = absl::Seconds(60);
  // A node silent this long is declared dead; zero disables. Default 30 s.
  absl::Duration heartbeat_timeout = absl::Seconds(30);
  // Key ranges per server. Default 32; range 1 .. 4096.
  int virtual_nodes = 32;
  // Terminate the job (failed) when a node is declared dead. Default true.
  bool fail_on_dead_node = true;
  // A node whose connection from the scheduler closed (its process died:
  // kill -9, a crash) and did not come back within this long is declared
  // dead, without waiting for heartbeat_timeout; a connection that comes
  // back sooner (ZeroMQ reconnects) is no loss. Zero disables (heartbeats
  // only). Default 300 ms; see docs/failures.md for the choice.
  absl::Duration connection_grace = absl::Milliseconds(300);
  // Copies of each key range on distinct servers (docs/failures.md,
  // "Replicated servers"): 1 keeps one copy and a server's death fails the
  // job; R >= 2 survives the death of any R - 1 servers whose ranges still
  // have a live copy. 0 = 2 when there are at least 2 servers, else 1
  // (the daemon's default, petrel-scheduler --replicas). Default 1 here, for
  // in-process clusters.
  int replicas = 1;
  // Take over a running job whose scheduler died: instead of admitting new
  // nodes, wait (join_timeout) for every node of the job to rejoin with its
  // id, rank and address, rebuild the node table and key-range map from
  // them and go on (scheduler_join.cc). Default false.
  bool recover = false;
};

struct DeadNode {
  pb::Node node;
  // How long the node had been silent (heartbeats) or its connection down.
  absl::Duration silent_for;
  // Why, e.g. "sent no heartbeat for 3s" or "connection closed".
  std::string reason;
};

// What an operator may ask the scheduler for over the admin channel
// (petrelctl; scheduler/admin_channel.h). Each runs on the van thread without
// the scheduler's lock and must not block.
struct AdminActions {
  // Takes a checkpoint now. Null, or an error status (FailedPrecondition:
  // the job has no checkpoint directory), is what petrelctl reports.
  std::function<absl::Status()> checkpoint;
  // Stops the job cleanly, as SIGTERM does (reason: "stop requested by
  // petrelctl"). Null: Interrupt(reason).
  std::function<void(const std::string& reason)> stop;
};

class Scheduler : private MembershipController::Host {
 public:
  // Installs its handlers in `postoffice`, which must be a scheduler's,
  // not yet started, and outlive this object.
  Scheduler(Postoffice* postoffice, SchedulerOptions options);
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Waits for the cluster to form, then for the job to end. Returns OK when
  // every worker finished; DeadlineExceeded naming the missing roles and
  // counts (and who joined from where) when the cluster did not form in
  // time; Aborted when a node died or Interrupt was called.
  absl::Status Run();
  // Terminates the job as failed with `reason` (e.g. on SIGTERM).
  void Interrupt(const std::string& reason);
  // Ends the job: OK as finished, else as failed with the status's message
  // (which Run returns). Ignored once the job ended.
  void EndJob(const absl::Status& result);
  // When set (before Run), the end of training (every worker finished)
  // calls `hook` on the van thread instead of ending the job; the hook's
  // owner then calls EndJob (e.g. after a final checkpoint). The hook must
  // not block or call back into the Scheduler.
  void set_workers_done_hook(std::function<void()> hook) {
    workers_done_hook_ = std::move(hook);
  }

  // When set (before Run), `hook` runs for every barrier passed, with its
  // group (van thread, the scheduler's lock held: it must not block or
  // call back into the Scheduler). The first barrier of every server and
  // worker follows the load of the checkpoint a job starts from.
  void set_barrier_passed_hook(std::function<void(int group)> hook) {
    barrier_passed_hook_ = std::move(hook);
  }

  // When set (before Run), a worker declared dead is offered to `hook`
  // (van thread, with the scheduler's lock held: it must not block or call
  // back into the Scheduler). When it returns true the job goes on without
  // the worker: barriers and the end of training count only the live
  // workers (scheduler/worker_recovery.h reassigns its data).
  void set_worker_lost_hook(std::function<bool(int node_id)> hook) {
    worker_lost_hook_ = std::move(hook);
  }

  // Before Run: what admin requests may do (see AdminActions).
  void set_admin_actions(AdminActions actions) {
    admin_actions_ = std::move(actions);
  }

  // The node ids of the workers not lost (all of them until one is); none
  // before the cluster formed.
  std::vector<int> live_workers() const;
  // The node ids of the servers whose ranges did not fail over (all of
  // them until one does), and the key-range map the job routes by now
  // (its primaries; the initial map until a failover).
  std::vector<int> live_servers() const;
  KeyRangeMap key_ranges() const;

  // Nodes declared dead so far.
  std::vector<DeadNode> dead_nodes() const;
  // The node table, once the cluster formed (empty before).
  std::vector<pb::Node> nodes() const;

 private:
  void HandleControl(Message&& msg);
  // When `sender` was declared dead: tells it that it is out of the job
  // (NODE_DEAD naming itself) and returns true.
  bool TellDeadNode(int sender) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void HandleJoin(const Message& msg) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Recovery (scheduler_join.cc). A node that had an id asks to be
  // taken back: after a restart with `recover` it rebuilds the table; a
  // scheduler that knows the node (it only missed its heartbeats)
  // acknowledges it; any other refuses.
  void HandleRejoin(const Message& msg) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status CheckRejoin(const pb::Node& node, const PeerAuth& peer)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Answers a rejoin CheckRejoin refused, where the answer can reach it.
  void RefuseRejoin(const pb::Node& node, const absl::Status& why)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Every node rejoined: installs the table and passes what waited for it.
  void CompleteRecovery() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void HandleBarrier(const Message& msg) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void HandleWorkerDone(int sender) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The job goes on without worker `id`.
  void LoseWorker(int id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Passes the barriers of `group` that every live member reached.
  void PassBarriers(int group) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Ends the job when every worker finished or was lost.
  void MaybeEndTraining() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::vector<int> LiveMembers(int group) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void OnTick(absl::Time now);
  // What petrelctl's requests do (AdminChannel).
  AdminChannel::Handlers AdminHandlers();
  // An admin reply's view of the job and, when `nodes`, every node's
  // status. Takes mu_.
  void FillAdminReply(bool nodes, pb::AdminReply* reply) const;
  // The nodes' part of a status reply.
  void FillStatus(pb::AdminReply* reply) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A heartbeat's stats: keeps them and the node's request rate.
  void RecordStats(int sender, const pb::NodeStats& stats)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Updates the cluster gauges (petrel_cluster_*, petrel_scheduler_*).
  void ExportClusterMetrics() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Failure handling. The van watched the node's
  // connection and it stayed down; van thread.
  void OnConnectionLost(int id, const std::string& reason);
  // Declares `node` dead (once): records and logs it with its id, role,
  // rank and host, tells every other node (COMMAND_NODE_DEAD, so that
  // waits on it fail at once) and, with fail_on_dead_node, ends the job.
  void DeclareDead(const pb::Node& node, const std::string& reason,
                   absl::Duration silent_for, const std::string& cause)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Draining a server (petrelctl drain-server): MembershipController's,
  // while the job runs. Takes mu_.
  absl::Status RequestDrain(int id);
  // MembershipController::Host, with mu_ held.
  std::vector<pb::Node>& table() override;
  void AdmitServer(const pb::Node& node) override;
  bool WorkerGone(int id) const override;
  void PassServerBarriers() override;
  // With CURVE on: whether the key the joining (or rejoining) connection
  // authenticated with may take the role the node asks for.
  static absl::Status CheckJoinKey(const pb::Node& node, const PeerAuth& peer);
  // Whether `node`, which presented the right auth token, may join.
  absl::Status CheckJoin(const pb::Node& node)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // InvalidArgument naming both values when the joining node was given
  // another cluster size than the scheduler's.
  absl::Status CheckClusterSize(const pb::Node& node) const;
  void FormCluster() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SendControl(int recipient, pb::Control control) override;
  // Sends `control` to every node of the table that is not dead, except the
  // scheduler and `except` (-1: none).
  void SendToLiveNodes(const pb::Control& control, int except) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool IsDead(int id) const override ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void TerminateAll(bool failed, const std::string& reason)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string DescribeMissing() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string Describe(int id) const override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Pending nodes have no id yet; replies to them travel on temporary
  // routes.
  static int PendingRoute(size_t index);
  static std::string RoleName(pb::Role role);
  // "host:port".
  static std::string Where(const pb::Node& node);

  Postoffice* const postoffice_;
  const SchedulerOptions options_;
  std::function<void()> workers_done_hook_;
  std::function<bool(int)> worker_lost_hook_;
  std::function<void(int)> barrier_passed_hook_;
  AdminActions admin_actions_;
  AdminChannel admin_;

  mutable absl::Mutex mu_;
  std::vector<pb::Node> pending_ ABSL_GUARDED_BY(mu_);  // join order
  bool formed_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<pb::Node> table_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<int, absl::Time> last_seen_ ABSL_GUARDED_BY(mu_);
  std::map<std::pair<int, uint64_t>, absl::flat_hash_set<int>> barriers_
      ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<int> done_workers_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<int> lost_workers_ ABSL_GUARDED_BY(mu_);
  // The servers' failovers, replacements, additions and drains, and the
  // key-range map they publish.
  MembershipController membership_ ABSL_GUARDED_BY(mu_);
  std::vector<DeadNode> dead_ ABSL_GUARDED_BY(mu_);
  std::optional<absl::Status> result_ ABSL_GUARDED_BY(mu_);
  // The last heartbeat stats of each node, and its requests per second
  // between its last two heartbeats.
  struct NodeReport {
    pb::NodeStats stats;
    absl::Time at = absl::InfinitePast();
    double requests_per_s = 0;
  };
  absl::flat_hash_map<int, NodeReport> reports_ ABSL_GUARDED_BY(mu_);
  uint64_t barriers_passed_ ABSL_GUARDED_BY(mu_) = 0;
  // Recovery: the nodes that rejoined, by id, and the key-range map the
  // first of them reported.
  std::map<int, pb::Node> rejoined_ ABSL_GUARDED_BY(mu_);
  // The key-range map fields (ranges, owners, replicas, version) of the
  // newest map a rejoining node reported.
  pb::Control recovered_map_ ABSL_GUARDED_BY(mu_);
  bool has_recovered_map_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace petrel

#endif  // PETREL_SCHEDULER_SCHEDULER_H_
