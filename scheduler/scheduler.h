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

#include "van/postoffice.h"
#include "van/replica_map.h"

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
  // them and go on (scheduler_recovery.cc). Default false.
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
// (petrelctl; scheduler_admin.cc). Each runs on the van thread without the
// scheduler's lock and must not block.
struct AdminActions {
  // Takes a checkpoint now. Null, or an error status (FailedPrecondition:
  // the job has no checkpoint directory), is what petrelctl reports.
  std::function<absl::Status()> checkpoint;
  // Stops the job cleanly, as SIGTERM does (reason: "stop requested by
  // petrelctl"). Null: Interrupt(reason).
  std::function<void(const std::string& reason)> stop;
};

class Scheduler {
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
  // (NODE_DEAD naming itself) and returns true (scheduler_failure.cc).
  bool TellDeadNode(int sender) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void HandleJoin(const Message& msg) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Recovery (scheduler_recovery.cc). A node that had an id asks to be
  // taken back: after a restart with `recover` it rebuilds the table; a
  // scheduler that knows the node (it only missed its heartbeats)
  // acknowledges it; any other refuses.
  void HandleRejoin(const Message& msg) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status CheckRejoin(const pb::Node& node, const PeerAuth& peer)
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
  // Admin channel (scheduler_admin.cc). Van thread, without mu_.
  void HandleAdmin(const Message& msg);
  // The reply to a status request. REQUIRES: mu_ held.
  void FillStatus(pb::AdminReply* reply) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A heartbeat's stats: keeps them and the node's request rate.
  void RecordStats(int sender, const pb::NodeStats& stats)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Updates the cluster gauges (petrel_cluster_*, petrel_scheduler_*).
  void ExportClusterMetrics() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Failure handling (scheduler_failure.cc). The van watched the node's
  // connection and it stayed down; van thread.
  void OnConnectionLost(int id, const std::string& reason);
  // Declares `node` dead (once): records and logs it with its id, role,
  // rank and host, tells every other node (COMMAND_NODE_DEAD, so that
  // waits on it fail at once) and, with fail_on_dead_node, ends the job.
  void DeclareDead(const pb::Node& node, const std::string& reason,
                   absl::Duration silent_for, const std::string& cause)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Replicated servers (scheduler_failover.cc): when every range the dead
  // server `node` led has a live replica, builds the next map, adds it and
  // the successor to `notice` and returns true (the job goes on).
  bool FailOverServer(const pb::Node& node, pb::Control* notice)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Replacement servers (scheduler_replacement.cc). The dead server rank a
  // server joining the formed job would replace, or the reason it may not.
  absl::StatusOr<int> ReplacementRank(const pb::Node& node) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Gives `node` the dead rank's id and place in the table, tells every
  // live node, and sends it the table and map (it then copies its ranges).
  void AdmitReplacement(pb::Node node, int rank)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The replacement holds its copy, made against map `version`: publishes
  // the map with it as a replica, or, when a failover since that map
  // changed its copy sources, refuses it with the reason. Answers `sender`
  // either way (a CAUGHT_UP whose reason is empty: accepted).
  void HandleCaughtUp(int sender, uint64_t version)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void AnswerCaughtUp(int sender, const std::string& refused)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Records the current map's copy sources of every replacement under way.
  void NoteMapForReplacements() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Elastic servers (scheduler_elastic.cc). The rank a server asking to be
  // added would take (the next one), or why it may not be added.
  absl::StatusOr<int> AddedServerRank() const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Makes `node` server `rank`, tells every live node, and sends it the
  // table and the map in which it holds its share (it then copies it).
  void AdmitAddedServer(pb::Node node, int rank)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The added server holds its share: publishes the map.
  void HandleAddedCaughtUp() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Draining a server (scheduler_drain.cc). Starts removing server `id`
  // (petrelctl drain-server), or says why it may not. Takes mu_.
  absl::Status RequestDrain(int id);
  // A server that gains copies in the drain holds them; false when
  // `sender` is none of those (a replacement's or added server's CAUGHT_UP).
  bool HandleDrainCaughtUp(int sender) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Every copy is made: publishes the map without the drained server to
  // the live servers (the drained one included); the other nodes get it
  // once every live server confirmed it (round 0 of QueryDrain).
  void PublishDrainedMap() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // NODE_BACK with the drained map to the live servers, or to the other
  // live nodes.
  void SendDrainedMap(bool servers) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The live nodes that must confirm the drained map in this round (not
  // the drained server, dead or lost nodes, finished workers): the
  // servers in round 0, every node in round 1.
  std::vector<int> DrainWaitsFor() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Asks the nodes that did not confirm this round yet (each tick); before
  // the map is published, abandons a drain whose copies take too long.
  void QueryDrain() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void HandleDrainDone(int sender, const pb::Control& control)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Every node confirmed the map: tells the drained server to stop.
  void FinishDrain() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The replication factor the job runs with (options_.replicas resolved,
  // at most the number of servers).
  int ResolvedReplicas() const;
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
  void SendControl(int recipient, pb::Control control);
  // Sends `control` to every node of the table that is not dead, except the
  // scheduler and `except` (-1: none).
  void SendToLiveNodes(const pb::Control& control, int except)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool IsDead(int id) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // NODE_BACK naming node `id` (from the table) with the current key-range
  // map: a replacement or an added server that is a replica now, or a
  // drained server's map without it.
  pb::Control NodeBackWithMap(int id) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Sets petrel_key_range_map_version to the current map's version.
  void SetMapVersionGauge() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void TerminateAll(bool failed, const std::string& reason)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string DescribeMissing() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string Describe(int id) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Postoffice* const postoffice_;
  const SchedulerOptions options_;
  std::function<void()> workers_done_hook_;
  std::function<bool(int)> worker_lost_hook_;
  std::function<void(int)> barrier_passed_hook_;
  AdminActions admin_actions_;

  mutable absl::Mutex mu_;
  std::vector<pb::Node> pending_ ABSL_GUARDED_BY(mu_);  // join order
  bool formed_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<pb::Node> table_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<int, absl::Time> last_seen_ ABSL_GUARDED_BY(mu_);
  std::map<std::pair<int, uint64_t>, absl::flat_hash_set<int>> barriers_
      ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<int> done_workers_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<int> lost_workers_ ABSL_GUARDED_BY(mu_);
  // Servers dead whose ranges replicas took over; the current map.
  absl::flat_hash_set<int> lost_servers_ ABSL_GUARDED_BY(mu_);
  std::optional<ReplicaMap> replica_map_ ABSL_GUARDED_BY(mu_);
  // Replacements copying their ranges, by node id: the rank, when it
  // joined, and its copy sources in each map published since (by version).
  struct Replacing {
    int rank;
    absl::Time since;
    absl::flat_hash_map<uint64_t, std::vector<std::pair<int, std::vector<int>>>>
        sources;
  };
  absl::flat_hash_map<int, Replacing> replacing_ ABSL_GUARDED_BY(mu_);
  std::vector<DeadNode> dead_ ABSL_GUARDED_BY(mu_);
  // A server being added (one at a time): its node id, when it joined, and
  // the map it copies its share for.
  struct AddingServer {
    int id;
    absl::Time since;
    ReplicaMap target;
  };
  std::optional<AddingServer> adding_ ABSL_GUARDED_BY(mu_);
  // A server being drained (one at a time): the map without it, the
  // servers still copying their new ranges, and, once the map is
  // published, the nodes that confirmed it in this round (0: the servers
  // route by it; 1: every node does, and waits for nothing from the
  // drained server).
  struct DrainingServer {
    int id;
    int rank;
    absl::Time since;
    ReplicaMap target;
    absl::flat_hash_set<int> copying;
    bool published;
    int round;  // DRAIN_QUERY: 0 servers, 1 every node, 2 retire it
    absl::flat_hash_set<int> confirmed;
  };
  std::optional<DrainingServer> draining_ ABSL_GUARDED_BY(mu_);
  // Servers drained out of the job (told to stop; their exit is no death).
  absl::flat_hash_set<int> drained_ ABSL_GUARDED_BY(mu_);
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
  // Admin replies travel on one of a few temporary routes, reused in turn.
  uint64_t admin_requests_ ABSL_GUARDED_BY(mu_) = 0;
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
