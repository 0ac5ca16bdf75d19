// PS-Lite compatibility: a node's settings from PS-Lite's environment
// variables alone (a PS-Lite program has no Petrel flags). The variables
// are node/legacy_env.h's; PETREL_AUTH_TOKEN, PETREL_REPLICAS and the
// PETREL_CURVE_* keys (security/curve_keys.h) add Petrel's own.
//
// Thread safety: stateless.
#ifndef PETREL_PSLITE_NODE_ENVIRONMENT_H_
#define PETREL_PSLITE_NODE_ENVIRONMENT_H_

#include <functional>

#include "absl/status/statusor.h"

#include "node/node_runtime.h"

namespace petrel {
namespace pslite {

struct PsLiteSettings {
  NodeSettings node;
  // Copies of each key range (the scheduler's SchedulerOptions::replicas):
  // PETREL_REPLICAS, default 1 (PS-Lite keeps one copy).
  int replicas = 1;
  // PS_VERBOSE: 1 logs each node's start and stop, 2 more. Default 0.
  int verbose = 0;
};

// InvalidArgument names the variable (DMLC_ROLE missing or not one of
// scheduler, server, worker; a number that does not parse; a scheduler
// address that does not resolve).
absl::StatusOr<PsLiteSettings> SettingsFromEnvironment(
    const std::function<const char*(const char*)>& getenv);

}  // namespace pslite
}  // namespace petrel

#endif  // PETREL_PSLITE_NODE_ENVIRONMENT_H_
