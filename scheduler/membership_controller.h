// MembershipController: the scheduler's part that changes which servers
// hold the key ranges of a running replicated job, and the key-range map
// each change publishes (docs/failures.md): a dead server's failover, a
// replacement taking a dead server's place, an added server (elastic), a
// drained one. It owns the replica map the job routes by, the servers that
// left it, and the changes under way (one added or drained server at a
// time).
//
// It is a part of the Scheduler, not a thread of its own: every method runs
// with the scheduler's lock held (the Scheduler holds it as a member guarded
// by that lock) and reaches the rest of the scheduler through Host.
#ifndef PETREL_SCHEDULER_MEMBERSHIP_CONTROLLER_H_
#define PETREL_SCHEDULER_MEMBERSHIP_CONTROLLER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

#include "cluster/postoffice.h"
#include "cluster/replica_map.h"
#include "proto/meta.pb.h"

namespace petrel {

class MembershipController {
 public:
  // What the controller needs of the scheduler. Called with the
  // scheduler's lock held, on the thread that holds it.
  class Host {
   public:
    virtual ~Host() = default;
    // The node table: a replacement takes its dead server's entry, an added
    // server is appended.
    virtual std::vector<pb::Node>& table() = 0;
    // Server `node` joins the running job: it is no longer dead, was seen
    // now, and its connection is admitted and connected to.
    virtual void AdmitServer(const pb::Node& node) = 0;
    virtual bool IsDead(int id) const = 0;
    // Whether node `id` is a worker that finished or was lost.
    virtual bool WorkerGone(int id) const = 0;
    // "node 9 (server 1 at host:port)".
    virtual std::string Describe(int id) const = 0;
    virtual void SendControl(int recipient, pb::Control control) = 0;
    // To every node of the table that is not dead, except the scheduler and
    // `except` (-1: none).
    virtual void SendToLiveNodes(const pb::Control& control, int except) = 0;
    // Passes the barriers of the groups that hold servers which every live
    // member reached (a server left them).
    virtual void PassServerBarriers() = 0;
  };

  // `postoffice` (the scheduler's) and `host` must outlive the controller.
  // `replicas` is SchedulerOptions::replicas.
  MembershipController(Postoffice* postoffice, int replicas, Host* host);
  MembershipController(const MembershipController&) = delete;
  MembershipController& operator=(const MembershipController&) = delete;

  // The replication factor the job runs with (`replicas` resolved, at most
  // the number of servers).
  int ResolvedReplicas() const;
  // Routes by `map` from now on: the initial one when the cluster formed,
  // or the one a recovery rebuilt from the nodes' reports.
  void SetMap(ReplicaMap map) { map_ = std::move(map); }
  // The map the job routes by; none before the cluster formed.
  const std::optional<ReplicaMap>& map() const { return map_; }
  // Server `id` left the ranges: it died and they failed over, or it was
  // drained.
  bool lost(int id) const { return lost_servers_.contains(id); }
  // Server `id` was drained out of the job (its exit is no death).
  bool drained(int id) const { return drained_.contains(id); }

  // Failover (membership_controller.cc). When every range the dead server
  // `node` led has a live replica: builds the next map, adds it and the
  // successor to `notice` and returns true (the job goes on). A
  // replacement that dies before it caught up is dropped (true, the map
  // unchanged): its rank waits for another replacement.
  bool FailOver(const pb::Node& node, pb::Control* notice);
  // The server rank `node`, joining the formed job, would take: a dead
  // server's it replaces, or the next one when it asks to be added; or the
  // reason it may not join.
  absl::StatusOr<int> JoinRank(const pb::Node& node) const;
  // Gives `node` server `rank` (from JoinRank), tells every live node, and
  // sends it the table and the map in which it holds its ranges (it then
  // copies them).
  void Admit(pb::Node node, int rank);
  // A server reports that it holds its copies, made against map `version`
  // (COMMAND_CAUGHT_UP): a server copying for a drain, a replacement or an
  // added server. Publishes the map that counts it when the copies are
  // good and answers it either way (a CAUGHT_UP whose reason is empty:
  // accepted).
  void HandleCaughtUp(int sender, uint64_t version);

  // Draining (membership_drain.cc). Starts removing live server `id` from
  // the running job (petrelctl drain-server), or says why it may not.
  absl::Status RequestDrain(int id);
  void HandleDrainDone(int sender, const pb::Control& control);
  // Each tick of a running job: asks the nodes that did not confirm this
  // drain round yet; before the map is published, abandons a drain whose
  // copies take too long.
  void QueryDrain();

 private:
  // Replacement servers: `node` takes dead server `rank`'s id and place.
  void AdmitReplacement(pb::Node node, int rank);
  // A replacement holds its copy, made against map `version`: publishes the
  // map with it as a replica, or, when a failover since that map changed
  // its copy sources, refuses it with the reason.
  void HandleReplacementCaughtUp(int sender, uint64_t version);
  // Replacement `node` died before it caught up: forgets it; returns true.
  bool DropReplacement(const pb::Node& node);
  // Tells the live nodes of joined server `node` (NODE_BACK), then sends it
  // the table and `map`, the one it copies its ranges for.
  void SendJoined(const pb::Node& node, const ReplicaMap& map, bool added);
  void AnswerCaughtUp(int sender, const std::string& refused);
  // Records the current map's copy sources of every replacement under way.
  void NoteMapForReplacements();
  // Elastic servers. The rank a server asking to be added would take (the
  // next one), or why it may not be added.
  absl::StatusOr<int> AddedServerRank() const;
  void AdmitAddedServer(pb::Node node, int rank);
  // The added server holds its share: publishes the map.
  void HandleAddedCaughtUp();
  // A server that gains copies in the drain holds them; false when
  // `sender` is none of those (a replacement's or added server's CAUGHT_UP).
  bool HandleDrainCaughtUp(int sender);
  // Every copy is made: publishes the map without the drained server to
  // the live servers (the drained one included); the other nodes get it
  // once every live server confirmed it (round 0 of QueryDrain).
  void PublishDrainedMap();
  // NODE_BACK with the drained map to the live servers, or to the other
  // live nodes.
  void SendDrainedMap(bool servers);
  // The live nodes that must confirm the drained map in this round (not
  // the drained server, dead or lost nodes, finished workers): the
  // servers in round 0, every node in round 1.
  std::vector<int> DrainWaitsFor() const;
  // Every node confirmed the map: tells the drained server to stop.
  void FinishDrain();
  // NODE_BACK naming node `id` (from the table) with the current key-range
  // map: a replacement or an added server that is a replica now, or a
  // drained server's map without it.
  pb::Control NodeBackWithMap(int id) const;
  // Sets petrel_key_range_map_version to the current map's version.
  void SetMapVersionGauge();
  // Sets petrel_scheduler_under_replicated_ranges; returns the count.
  int64_t SetUnderReplicatedGauge();

  Postoffice* const postoffice_;
  const int replicas_;
  Host* const host_;

  std::optional<ReplicaMap> map_;
  // Servers dead whose ranges replicas took over, and drained servers.
  absl::flat_hash_set<int> lost_servers_;
  // Replacements copying their ranges, by node id: the rank, when it
  // joined, and its copy sources in each map published since (by version).
  struct Replacing {
    int rank;
    absl::Time since;
    absl::flat_hash_map<uint64_t, std::vector<std::pair<int, std::vector<int>>>>
        sources;
  };
  absl::flat_hash_map<int, Replacing> replacing_;
  // A server being added (one at a time): its node id, when it joined, and
  // the map it copies its share for.
  struct AddingServer {
    int id;
    absl::Time since;
    ReplicaMap target;
  };
  std::optional<AddingServer> adding_;
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
  std::optional<DrainingServer> draining_;
  // Servers drained out of the job (told to stop; their exit is no death).
  absl::flat_hash_set<int> drained_;
};

}  // namespace petrel

#endif  // PETREL_SCHEDULER_MEMBERSHIP_CONTROLLER_H_
