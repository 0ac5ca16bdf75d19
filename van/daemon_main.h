// RunNodeDaemon: the start-up and exit of Petrel's node daemons
// (petrel-scheduler, petrel-server, petrel-worker) in one place. Each
// daemon's main() describes itself (DaemonInfo) and implements NodeDaemon;
// RunNodeDaemon then does what they all share, in this order:
//   1. parses the command line (node_flags.h: --help exits 0, an unknown
//      flag or a stray argument exits 2) and logs to stderr with glog;
//   2. blocks SIGTERM and SIGINT before any thread starts (SignalWatcher);
//   3. NodeDaemon::LoadConfig, the node settings from flags and DMLC_*
//      variables, NodeDaemon::CheckFlags;
//   4. builds the NodeRuntime (ZeroMQ van, metrics endpoint) and
//      NodeDaemon::Build on it;
//   5. turns a signal into NodeDaemon::Interrupt("SIGTERM received") (and
//      from then on gives queued messages a short linger at stop); a
//      second SIGTERM/SIGINT, or --stop_timeout_s after the first, ends the
//      process at once (exit 1, one line); with DaemonInfo::watch_usr1,
//      SIGUSR1 calls NodeDaemon::OnUsr1;
//   6. NodeDaemon::Run (which starts the runtime: the PETREL_READY or
//      PETREL_LISTEN line), stops the runtime, NodeDaemon::Finish;
//   7. prints one line "<name>: <message>" on stderr for a failure.
// Exit codes: 0 success; 2 a failure in steps 1-4 (bad flags or
// configuration) or an InvalidArgument from Run/Finish; 1 any other
// failure (a deadline, a failed job, a signal).
//
// Part of the flags module of node binaries (it parses the command line):
// linked into executables only, never into a library.
//
// Thread safety: RunNodeDaemon runs on the main thread; Interrupt on a
// thread of its own and OnUsr1 on the signal watcher's, concurrently with
// Run.
#ifndef PETREL_VAN_DAEMON_MAIN_H_
#define PETREL_VAN_DAEMON_MAIN_H_

#include <memory>
#include <string>

#include "absl/status/status.h"

#include "proto/meta.pb.h"
#include "van/node_runtime.h"

namespace petrel {

// What one daemon does beyond the shared start-up. Every step may fail
// with a Status whose message becomes the daemon's one line on stderr.
class NodeDaemon {
 public:
  virtual ~NodeDaemon() = default;

  // Reads files whose values are defaults of the node flags (e.g. a job
  // config's cluster sizes), before the settings are built.
  virtual absl::Status LoadConfig() { return absl::OkStatus(); }
  // Checks the daemon's own flags once the node settings are valid.
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
  // SIGUSR1 arrived (only with DaemonInfo::watch_usr1). Signal thread.
  virtual void OnUsr1(NodeRuntime& /*runtime*/) {}
};

struct DaemonInfo {
  // The program's name, which starts its line on stderr.
  const char* name = "";
  pb::Role role = pb::ROLE_UNSPECIFIED;
  // The usage message --help prints above the flags.
  const char* usage = "";
  // Calls TuneAllocatorForLargeMessages before the runtime starts.
  bool tune_allocator = false;
  // Watch SIGUSR1 (NodeDaemon::OnUsr1). Default false.
  bool watch_usr1 = false;
};

// Runs `daemon` as described above; returns main's exit code. `daemon` is
// destroyed before the runtime, so its parts may hold on to the Postoffice.
int RunNodeDaemon(int argc, char** argv, const DaemonInfo& info,
                  std::unique_ptr<NodeDaemon> daemon);

}  // namespace petrel

#endif  // PETREL_VAN_DAEMON_MAIN_H_
