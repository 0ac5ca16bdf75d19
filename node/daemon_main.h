// RunNodeDaemon: the start-up and exit of Petrel's node daemons
// (petrel-scheduler, petrel-server, petrel-worker) in one place. Each
// daemon's main() describes itself (DaemonInfo) and gives a NodeDaemon
// (node/node_daemon.h); RunNodeDaemon then does what they all share, in
// this order:
//   1. parses the command line (base/cli.h: --help and --version exit 0,
//      an unknown flag or a stray argument exits 2; glog logs to stderr or
//      --log_dir); with DaemonInfo::other_role, DMLC_ROLE may name another
//      role, whose daemon then runs instead;
//   2. blocks SIGTERM and SIGINT before any thread starts (SignalWatcher);
//   3. NodeDaemon::LoadConfig, the node settings from flags and DMLC_*
//      variables, NodeDaemon::CheckFlags;
//   4. builds the NodeRuntime (ZeroMQ van, metrics endpoint) and
//      NodeDaemon::Build on it;
//   5. turns a signal into NodeDaemon::Interrupt("SIGTERM received") (and
//      from then on gives queued messages a short linger at stop); a
//      second SIGTERM/SIGINT, or --stop_timeout_s after the first, ends the
//      process at once (exit 1, one line); when the daemon handles_usr1,
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
#ifndef PETREL_NODE_DAEMON_MAIN_H_
#define PETREL_NODE_DAEMON_MAIN_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

#include "node/node_daemon.h"
#include "proto/meta.pb.h"

namespace petrel {

using DaemonFactory =
    std::function<absl::StatusOr<std::unique_ptr<NodeDaemon>>()>;
using RoleDaemonFactory =
    std::function<absl::StatusOr<std::unique_ptr<NodeDaemon>>(pb::Role)>;

struct DaemonInfo {
  // The program's name, which starts its line on stderr.
  std::string name;
  // The program's own role.
  pb::Role role = pb::ROLE_UNSPECIFIED;
  // The usage message --help prints above the flags.
  std::string usage;
  // Builds the program's daemon once the command line is parsed; an error
  // (InvalidArgument for a bad flag) is the program's one line. Required.
  DaemonFactory make_daemon;
  // Builds the daemon of another role when DMLC_ROLE names one (PS-Lite's
  // launchers start one program in every role); returns nullptr for a role
  // it does not run. Default none: DMLC_ROLE must name the program's role.
  RoleDaemonFactory other_role;
};

// Runs the program's daemon (or, with DaemonInfo::other_role, the one
// DMLC_ROLE names) as described above; returns main's exit code. The
// daemon is destroyed before the runtime, so its parts may hold on to the
// Postoffice.
int RunNodeDaemon(int argc, char** argv, const DaemonInfo& info);

// Steps 2 to 7 of RunNodeDaemon, for a program that parsed its command line
// itself (base/cli.h): runs `daemon` as role `role`, its lines starting
// with `name`. Returns the exit code.
int RunParsedNodeDaemon(const std::string& name, pb::Role role,
                        std::unique_ptr<NodeDaemon> daemon);

}  // namespace petrel

#endif  // PETREL_NODE_DAEMON_MAIN_H_
