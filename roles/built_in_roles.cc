#include "roles/built_in_roles.h"

#include <cstdio>
#include <cstdlib>

#include "node/daemon_main.h"
#include "node/legacy_env.h"
#include "scheduler/scheduler_flags.h"
#include "server/server_flags.h"

namespace petrel {

absl::StatusOr<std::unique_ptr<NodeDaemon>> BuiltInDaemonFromFlags(
    pb::Role role) {
  switch (role) {
    case pb::ROLE_SCHEDULER:
      return SchedulerDaemonFromFlags();
    case pb::ROLE_SERVER:
      return ServerDaemonFromFlags();
    default:
      return std::unique_ptr<NodeDaemon>();
  }
}

std::optional<int> RunBuiltInRole(const std::string& program_name) {
  absl::StatusOr<LegacyEnv> env = ReadLegacyEnv(&std::getenv);
  if (!env.ok()) {
    std::fprintf(stderr, "%s: %s\n", program_name.c_str(),
                 std::string(env.status().message()).c_str());
    return 2;
  }
  if (!env->role.has_value() || *env->role == "worker") return std::nullopt;
  const pb::Role role =
      *env->role == "scheduler" ? pb::ROLE_SCHEDULER : pb::ROLE_SERVER;
  absl::StatusOr<std::unique_ptr<NodeDaemon>> daemon =
      BuiltInDaemonFromFlags(role);
  if (!daemon.ok()) {
    std::fprintf(stderr, "%s: %s\n", program_name.c_str(),
                 std::string(daemon.status().message()).c_str());
    return 2;
  }
  return RunParsedNodeDaemon(program_name, role, *std::move(daemon));
}

}  // namespace petrel
