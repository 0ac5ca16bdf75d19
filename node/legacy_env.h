// PS-Lite compatibility: reads the DMLC_* environment variables that
// existing launch scripts set. This is the only place that knows them; the
// table is in docs/configuration.md. A command-line flag overrides each.
//
// | variable            | meaning                          | Petrel flag | |
// DMLC_ROLE           | scheduler, server or worker      | (the binary)      |
// | DMLC_PS_ROOT_URI    | scheduler host                   | --scheduler host |
// | DMLC_PS_ROOT_PORT   | scheduler port                   | --scheduler port |
// | DMLC_NUM_SERVER     | number of servers                | --num_servers | |
// DMLC_NUM_WORKER     | number of workers                | --num_workers     |
// | DMLC_NODE_HOST      | host to advertise                | --advertise_host |
// | DMLC_INTERFACE      | interface whose address to use   | --interface | |
// DMLC_PORT           | port to bind                     | --port            |
//
// Thread safety: stateless.
#ifndef PETREL_NODE_LEGACY_ENV_H_
#define PETREL_NODE_LEGACY_ENV_H_

#include <functional>
#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace petrel {

struct LegacyEnv {
  std::optional<std::string> role;
  std::optional<std::string> root_uri;
  std::optional<int> root_port;
  std::optional<int> num_server;
  std::optional<int> num_worker;
  std::optional<std::string> node_host;
  std::optional<std::string> interface_name;
  std::optional<int> port;
};

// Reads the variables through `getenv` (pass ::getenv from main; tests pass a
// map). Unset or empty variables stay nullopt; a number that does not parse
// is InvalidArgument naming the variable and its value.
absl::StatusOr<LegacyEnv> ReadLegacyEnv(
    const std::function<const char*(const char*)>& getenv);

}  // namespace petrel

#endif  // PETREL_NODE_LEGACY_ENV_H_
