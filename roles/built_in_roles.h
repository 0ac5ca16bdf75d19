// One program in every role, as PS-Lite's launchers run it (tests/local.sh,
// the dmlc tracker): the same worker program is started as the scheduler,
// each server and each worker, and DMLC_ROLE tells each process what it is.
// A process told it is the scheduler or a server runs Petrel's built-in
// scheduler or server (scheduler/scheduler_daemon.h,
// server/server_daemon.h) in its own process, configured by the same
// flags as petrel-scheduler and petrel-server, and returns when the job
// ends: PS-Lite's ps::Start() ... ps::Finalize() around a worker's code.
//
//   int main(int argc, char** argv) {
//     if (int code = petrel::ParseCommandLine(cli, &argc, &argv); code >= 0)
//       return code;
//     if (std::optional<int> code = petrel::RunBuiltInRole("my-program"))
//       return *code;  // this process was the scheduler or a server
//     ...  // the worker: NodeSettingsFromFlags(pb::ROLE_WORKER), NodeRuntime
//   }
//
// Part of the flags module of node programs (it reads the scheduler's and
// server's flags): linked into executables only.
//
// Thread safety: call from main, as RunNodeDaemon.
#ifndef PETREL_ROLES_BUILT_IN_ROLES_H_
#define PETREL_ROLES_BUILT_IN_ROLES_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"

#include "node/node_daemon.h"
#include "proto/meta.pb.h"

namespace petrel {

// The built-in daemon of `role` with its options from the flags: the
// scheduler or a server; nullptr for a worker (the program's own code).
// InvalidArgument names a bad flag. Fits DaemonInfo::other_role.
absl::StatusOr<std::unique_ptr<NodeDaemon>> BuiltInDaemonFromFlags(
    pb::Role role);

// When DMLC_ROLE names the scheduler or a server, runs it here until the
// job ends and returns the exit code main should return (0 the job
// finished, 1 it failed, 2 bad flags or configuration; its failure is one
// line on stderr starting with `program_name`). Returns nullopt when the
// program goes on as a worker: DMLC_ROLE is worker or unset.
// REQUIRES: the command line was parsed (base/cli.h ParseCommandLine).
std::optional<int> RunBuiltInRole(const std::string& program_name);

}  // namespace petrel

#endif  // PETREL_ROLES_BUILT_IN_ROLES_H_
