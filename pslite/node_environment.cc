#include "pslite/node_environment.h"

#include <optional>
#include <string>
#include <tuple>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

#include "base/net_util.h"
#include "base/status_macros.h"
#include "node/legacy_env.h"
#include "security/authorized_keys.h"
#include "security/curve_keys.h"

namespace petrel {
namespace pslite {
namespace {

using GetEnv = std::function<const char*(const char*)>;

absl::StatusOr<pb::Role> RoleOf(const LegacyEnv& env) {
  if (!env.role.has_value()) {
    return absl::InvalidArgumentError(
        "DMLC_ROLE is not set: set it to scheduler, server or worker (a "
        "PS-Lite program learns its role from it)");
  }
  // ReadLegacyEnv refused any other value.
  if (*env.role == "scheduler") return pb::ROLE_SCHEDULER;
  return *env.role == "server" ? pb::ROLE_SERVER : pb::ROLE_WORKER;
}

// A count of 1..16384 from `value`, else `fallback`.
absl::Status ApplyCount(const char* name, std::optional<int> value, int* count,
                        bool* given) {
  if (!value.has_value()) return absl::OkStatus();
  if (*value < 1 || *value > 16384) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, "=", *value, " is not in 1..16384"));
  }
  *count = *value;
  *given = true;
  return absl::OkStatus();
}

absl::Status ApplyAddresses(const LegacyEnv& env, NodeSettings& s) {
  PostofficeOptions& po = s.postoffice;
  if (env.root_uri.has_value()) po.scheduler_host = *env.root_uri;
  if (env.root_port.has_value()) po.scheduler_port = *env.root_port;
  if (po.scheduler_port <= 0 || po.scheduler_port > 65535) {
    return absl::InvalidArgumentError(
        "no scheduler port: set DMLC_PS_ROOT_URI and DMLC_PS_ROOT_PORT "
        "(1..65535)");
  }
  if (po.role == pb::ROLE_SCHEDULER) {
    s.van.port = po.scheduler_port;
    po.advertise_host = po.scheduler_host;
  } else {
    PETREL_RETURN_IF_ERROR(
        Annotate(CheckHostResolves(po.scheduler_host), "DMLC_PS_ROOT_URI"));
    if (env.port.has_value()) s.van.port = *env.port;
  }
  if (s.van.port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("DMLC_PORT=", s.van.port, " is not a port"));
  }
  if (env.interface_name.has_value()) {
    absl::StatusOr<std::string> address = InterfaceAddress(*env.interface_name);
    if (!address.ok()) return Annotate(address.status(), "DMLC_INTERFACE");
    po.advertise_host = *address;
  }
  if (env.node_host.has_value()) po.advertise_host = *env.node_host;
  return absl::OkStatus();
}

absl::Status ApplyPetrelVariables(const GetEnv& getenv, PsLiteSettings& s) {
  if (const char* token = getenv("PETREL_AUTH_TOKEN"); token != nullptr) {
    s.node.postoffice.auth_token = token;
  }
  for (auto [name, field, low, high] :
       {std::make_tuple("PETREL_REPLICAS", &s.replicas, 1, 16),
        std::make_tuple("PS_VERBOSE", &s.verbose, 0, 10)}) {
    const char* text = getenv(name);
    if (text == nullptr || *text == '\0') continue;
    if (!absl::SimpleAtoi(text, field) || *field < low || *field > high) {
      return absl::InvalidArgumentError(absl::StrCat(
          name, "='", text, "' is not an integer in ", low, "..", high));
    }
  }
  s.node.warn_open_cluster = getenv(kOpenClusterWarnedVariable) == nullptr;
  CurveKeySources sources;
  ReadCurveKeyEnvironment(getenv, &sources);
  PETREL_ASSIGN_OR_RETURN(s.node.van.curve, LoadCurveOptions(sources));
  return CompleteCurveOptions(s.node.postoffice.role == pb::ROLE_SCHEDULER,
                              &s.node.van.curve);
}

}  // namespace

absl::StatusOr<PsLiteSettings> SettingsFromEnvironment(const GetEnv& getenv) {
  PETREL_ASSIGN_OR_RETURN(LegacyEnv env, ReadLegacyEnv(getenv));
  PsLiteSettings s;
  PostofficeOptions& po = s.node.postoffice;
  PETREL_ASSIGN_OR_RETURN(po.role, RoleOf(env));
  PETREL_RETURN_IF_ERROR(ApplyCount("DMLC_NUM_SERVER", env.num_server,
                                    &po.num_servers, &po.num_servers_given));
  PETREL_RETURN_IF_ERROR(ApplyCount("DMLC_NUM_WORKER", env.num_worker,
                                    &po.num_workers, &po.num_workers_given));
  PETREL_RETURN_IF_ERROR(ApplyAddresses(env, s.node));
  PETREL_RETURN_IF_ERROR(ApplyPetrelVariables(getenv, s));
  return s;
}

}  // namespace pslite
}  // namespace petrel
