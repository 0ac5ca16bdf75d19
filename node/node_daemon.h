// NodeDaemon: what one node daemon (the scheduler, a server, a worker job)
// does beyond the start-up every node shares. RunNodeDaemon
// (node/daemon_main.h) drives it: LoadConfig, the node settings, CheckFlags,
// Build, Run, Finish, and Interrupt / OnUsr1 on signals. The built-in
// scheduler and server are NodeDaemons in their role's library
// (scheduler/scheduler_daemon.h, server/server_daemon.h), so that any node
// program can run them in its own process when DMLC_ROLE says so.
//
// Thread safety: every method runs on the thread RunNodeDaemon runs on,
// except Interrupt (a thread of its own) and OnUsr1 (the signal watcher's),
// which run concurrently with Run.
#ifndef PETREL_NODE_NODE_DAEMON_H_
#define PETREL_NODE_NODE_DAEMON_H_

#include <string>

#include "absl/status/status.h"

#include "node/node_runtime.h"

namespace petrel {

// Cluster sizes from a daemon's job config: the defaults of --num_servers
// and --num_workers (DMLC_* variables and the flags win). 0: not given.
struct ClusterDefaults {
  int num_servers = 0;
  int num_workers = 0;
};

// Every step may fail with a Status whose message becomes the daemon's one
// line on stderr.
class NodeDaemon {
 public:
  virtual ~NodeDaemon() = default;

  // Reads files whose values are defaults of the node settings (a job
  // config's cluster sizes, written to `defaults`), before the settings are
  // built.
  virtual absl::Status LoadConfig(ClusterDefaults* /*defaults*/) {
    return absl::OkStatus();
  }
  // Checks the daemon's own options once the node settings are valid.
  virtual absl::Status CheckFlags(const NodeSettings& /*settings*/) {
    return absl::OkStatus();
  }
  // Builds the daemon's parts on `runtime`, which is not started yet.
  virtual absl::Status Build(NodeRuntime& /*runtime*/) {
    return absl::OkStatus();
  }
  // Starts `runtime` and runs the node until its job ended.
  virtual absl::Status Run(NodeRuntime& runtime) = 0;
  // Runs after the runtime stopped (no request runs any more) with Run's
  // result; returns the daemon's final result. Default: `status`.
  virtual absl::Status Finish(NodeRuntime& /*runtime*/, absl::Status status) {
    return status;
  }
  // A signal arrived: `reason` is e.g. "SIGTERM received". Runs on a
  // thread of its own, concurrently with Run and possibly past its end (it
  // is joined before RunNodeDaemon returns), so it may wait briefly (e.g.
  // for the scheduler to acknowledge a stop). Default: wakes the
  // Postoffice's waiters with Aborted(reason).
  virtual void Interrupt(NodeRuntime& runtime, const std::string& reason) {
    runtime.postoffice()->Interrupt(reason);
  }
  // SIGUSR1 arrived (only when handles_usr1()). Signal thread.
  virtual void OnUsr1(NodeRuntime& /*runtime*/) {}
  // SIGUSR1 is the daemon's (OnUsr1); otherwise it keeps its default
  // action. Default false.
  virtual bool handles_usr1() const { return false; }
  // TuneAllocatorForLargeMessages runs before the runtime starts (servers).
  // Default false.
  virtual bool tunes_allocator() const { return false; }
};

}  // namespace petrel

#endif  // PETREL_NODE_NODE_DAEMON_H_
