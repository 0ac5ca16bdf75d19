// PS-Lite compatibility (docs/pslite.md): ps::Postoffice, the process's one
// node, as PS-Lite's Postoffice::Get(). It is the only process-wide object
// in Petrel, because PS-Lite's API is built on one: Petrel's own programs
// build a petrel::Postoffice and pass it down.
//
// The first Get() reads the node's settings from PS-Lite's environment
// (DMLC_ROLE, DMLC_PS_ROOT_URI, DMLC_PS_ROOT_PORT, DMLC_NUM_SERVER,
// DMLC_NUM_WORKER, DMLC_NODE_HOST, DMLC_INTERFACE, DMLC_PORT, and Petrel's
// PETREL_CURVE_* keys); a variable that is missing or does not parse ends
// the program with a message naming it (exit code 2). Start joins the
// cluster over Petrel's own van, Postoffice and Customers; with DMLC_ROLE=
// scheduler the process also runs Petrel's scheduler.
//
// A worker's customers are workers of their own, as in PS-Lite: the first
// Start(customer_id) of each joins the cluster as one more worker (with its
// own connections and rank), so DMLC_NUM_WORKER counts them, and a
// KVWorker(app_id, customer_id) talks through that worker. A server's or
// the scheduler's customers share its one node.
//
// Thread safety: thread-safe.
#ifndef PETREL_PSLITE_INCLUDE_PS_INTERNAL_POSTOFFICE_H_
#define PETREL_PSLITE_INCLUDE_PS_INTERNAL_POSTOFFICE_H_

#include <functional>
#include <memory>
#include <vector>

#include "ps/range.h"

namespace petrel {
class Postoffice;
}  // namespace petrel

namespace ps {

class Postoffice {
 public:
  // The process's node, built on first use from the environment.
  static Postoffice* Get();

  Postoffice(const Postoffice&) = delete;
  Postoffice& operator=(const Postoffice&) = delete;

  // Starts the node once per process: joins the cluster (the scheduler
  // binds its port) and, with `do_barrier`, waits until every node of the
  // job started. Further calls (other customers of a multi-threaded worker)
  // wait for that and return. A node that cannot join ends the program
  // with the reason (exit code 1; 2 for a bad setting).
  void Start(int customer_id, const char* argv0, bool do_barrier);
  // Ends `customer_id`'s part. The node stops once every customer that
  // called Start called Finalize: the last one waits (with `do_barrier`)
  // until every node of the job reached Finalize, runs the exit callback,
  // waits for the job's end (workers report they finished; the others wait
  // for the scheduler to end the job) and stops the node. Earlier callers
  // return once it stopped.
  void Finalize(int customer_id, bool do_barrier);
  // Runs in Finalize before the node stops (e.g. deletes a KVServer).
  void RegisterExitCallback(const std::function<void()>& cb);

  // Blocks until every node of `node_group` (kScheduler, kServerGroup,
  // kWorkerGroup or a sum of them) called Barrier with it.
  void Barrier(int customer_id, int node_group);

  bool is_scheduler() const;
  bool is_server() const;
  bool is_worker() const;
  // This node's rank among the servers or workers (0 for the scheduler).
  int my_rank() const;
  int num_servers() const;
  int num_workers() const;
  // PS-Lite's even split of [0, kMaxKey) into one range per server. Petrel
  // does not route by these ranges: a key goes to the server its hash
  // picks (docs/pslite.md), so a server gets keys outside its range.
  const std::vector<Range>& GetServerKeyRanges();
  // The node ids of a group (or the id itself), PS-Lite's numbering.
  const std::vector<int>& GetNodeIDs(int node_group) const;
  static int WorkerRankToID(int rank) { return rank * 2 + 9; }
  static int ServerRankToID(int rank) { return rank * 2 + 8; }
  static int IDtoRank(int id) { return id < 8 ? 0 : (id - 8) / 2; }
  // PS_VERBOSE (0 when unset).
  int verbose() const;
  // A PS-Lite node may rejoin as a replacement; Petrel's replacements join
  // with petrel-server flags (docs/failures.md). Always false here.
  bool is_recovery() const { return false; }

  // Petrel's Postoffice under this one, for Petrel's own APIs: the node
  // of `customer_id` (a worker's customer that called Start), else the
  // process's first node.
  petrel::Postoffice* petrel(int customer_id = 0);

 private:
  class Nodes;
  Postoffice();
  ~Postoffice();

  std::unique_ptr<Nodes> nodes_;
};

}  // namespace ps

#endif  // PETREL_PSLITE_INCLUDE_PS_INTERNAL_POSTOFFICE_H_
