// ClientSettings: the node settings of a worker that joins a cluster from a
// library (the Python module) rather than from a node binary's command
// line. Layers, as node_flags.h builds them for binaries: defaults, then
// the DMLC_* environment (node/legacy_env.h), then PETREL_SCHEDULER and
// PETREL_RANK (set by petrel-launch), then the caller's explicit arguments
// (an argument always wins). No gflags: a library reads no flags.
//
// Thread safety: stateless.
#ifndef PETREL_PYTHON_CLIENT_SETTINGS_H_
#define PETREL_PYTHON_CLIENT_SETTINGS_H_

#include <functional>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

#include "node/node_runtime.h"

namespace petrel {

// What the caller said; nullopt leaves the environment's value or the
// default.
struct ClientArgs {
  std::optional<std::string> scheduler;  // "HOST:PORT"
  std::optional<int> num_servers;
  std::optional<int> num_workers;
  std::optional<int> rank;  // -1: join order decides
  std::optional<std::string> bind;
  std::optional<int> port;
  std::optional<std::string> advertise_host;
  std::optional<std::string> interface_name;
  std::optional<std::string> auth_token;
  std::optional<absl::Duration> join_timeout;
  std::optional<absl::Duration> heartbeat_interval;
  std::optional<int> metrics_port;  // -1 disables, 0 picks a free port
};

// The settings of a worker node. `getenv` reads the environment (pass
// ::getenv; tests pass a map). InvalidArgument names the argument or
// variable and what is wrong with it, e.g. no scheduler address at all.
absl::StatusOr<NodeSettings> WorkerSettings(
    const ClientArgs& args,
    const std::function<const char*(const char*)>& getenv);

}  // namespace petrel

#endif  // PETREL_PYTHON_CLIENT_SETTINGS_H_
