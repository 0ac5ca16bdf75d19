#include "python/client_settings.h"

#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

#include "base/net_util.h"
#include "base/status_macros.h"
#include "node/legacy_env.h"
#include "security/authorized_keys.h"
#include "security/curve_keys.h"

namespace petrel {
namespace {

absl::Status Invalid(absl::string_view what, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(what, ": ", why));
}

std::optional<std::string> EnvString(
    const std::function<const char*(const char*)>& getenv, const char* name) {
  const char* v = getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

absl::Status ApplyScheduler(
    const ClientArgs& args, const LegacyEnv& env,
    const std::function<const char*(const char*)>& getenv,
    PostofficeOptions& po) {
  if (env.root_uri.has_value()) po.scheduler_host = *env.root_uri;
  if (env.root_port.has_value()) po.scheduler_port = *env.root_port;
  std::optional<std::string> address = args.scheduler;
  const char* source = "scheduler";
  if (!address.has_value()) {
    address = EnvString(getenv, "PETREL_SCHEDULER");
    source = "PETREL_SCHEDULER";
  }
  if (address.has_value()) {
    absl::StatusOr<std::pair<std::string, int>> hp = ParseHostPort(*address);
    if (!hp.ok()) return Invalid(source, hp.status().message());
    po.scheduler_host = hp->first;
    po.scheduler_port = hp->second;
  }
  if (po.scheduler_port == 0) {
    return Invalid("scheduler",
                   "no scheduler address; pass scheduler=\"HOST:PORT\" or set "
                   "PETREL_SCHEDULER, or DMLC_PS_ROOT_URI and "
                   "DMLC_PS_ROOT_PORT");
  }
  return absl::OkStatus();
}

absl::Status ApplyHost(const ClientArgs& args, const LegacyEnv& env,
                       PostofficeOptions& po) {
  if (env.node_host.has_value()) po.advertise_host = *env.node_host;
  std::string interface =
      args.interface_name.value_or(env.interface_name.value_or(""));
  if (!interface.empty() && !args.advertise_host.has_value()) {
    absl::StatusOr<std::string> address = InterfaceAddress(interface);
    if (!address.ok()) return Invalid("interface", address.status().message());
    po.advertise_host = *address;
  }
  if (args.advertise_host.has_value()) po.advertise_host = *args.advertise_host;
  return absl::OkStatus();
}

absl::Status ApplyCounts(const ClientArgs& args, const LegacyEnv& env,
                         const std::function<const char*(const char*)>& getenv,
                         PostofficeOptions& po) {
  po.num_servers = args.num_servers.value_or(env.num_server.value_or(1));
  po.num_workers = args.num_workers.value_or(env.num_worker.value_or(1));
  if (po.num_servers < 1 || po.num_servers > 16384) {
    return Invalid("num_servers",
                   absl::StrCat(po.num_servers, " is not in 1..16384"));
  }
  if (po.num_workers < 1 || po.num_workers > 16384) {
    return Invalid("num_workers",
                   absl::StrCat(po.num_workers, " is not in 1..16384"));
  }
  po.requested_rank = -1;
  if (std::optional<std::string> r = EnvString(getenv, "PETREL_RANK")) {
    if (!absl::SimpleAtoi(*r, &po.requested_rank) || po.requested_rank < 0) {
      return Invalid("PETREL_RANK",
                     absl::StrCat("'", *r, "' is not a non-negative integer"));
    }
  }
  if (args.rank.has_value()) po.requested_rank = *args.rank;
  if (po.requested_rank < -1 || po.requested_rank >= po.num_workers) {
    return Invalid("rank", absl::StrCat(po.requested_rank, " is not in -1..",
                                        po.num_workers - 1));
  }
  return absl::OkStatus();
}

absl::Status ApplyTimes(const ClientArgs& args, PostofficeOptions& po) {
  if (args.join_timeout.has_value()) po.join_timeout = *args.join_timeout;
  if (po.join_timeout <= absl::ZeroDuration() ||
      po.join_timeout > absl::Hours(24)) {
    return Invalid("join_timeout", "must be in (0, 86400] seconds");
  }
  if (args.heartbeat_interval.has_value())
    po.heartbeat_interval = *args.heartbeat_interval;
  if (po.heartbeat_interval < absl::ZeroDuration()) {
    return Invalid("heartbeat_interval", "must be >= 0");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<NodeSettings> WorkerSettings(
    const ClientArgs& args,
    const std::function<const char*(const char*)>& getenv) {
  PETREL_ASSIGN_OR_RETURN(LegacyEnv env, ReadLegacyEnv(getenv));
  if (env.role.has_value() && *env.role != "worker") {
    return absl::InvalidArgumentError(absl::StrCat(
        "DMLC_ROLE=", *env.role, " but a Python client is a worker"));
  }
  NodeSettings s;
  PostofficeOptions& po = s.postoffice;
  po.role = pb::ROLE_WORKER;
  PETREL_RETURN_IF_ERROR(ApplyScheduler(args, env, getenv, po));
  PETREL_RETURN_IF_ERROR(ApplyHost(args, env, po));
  PETREL_RETURN_IF_ERROR(ApplyCounts(args, env, getenv, po));
  PETREL_RETURN_IF_ERROR(ApplyTimes(args, po));
  po.auth_token = args.auth_token.value_or("");
  s.van.bind_host = args.bind.value_or("0.0.0.0");
  s.van.port = args.port.value_or(env.port.value_or(0));
  if (s.van.port < 0 || s.van.port > 65535) {
    return Invalid("port", absl::StrCat(s.van.port, " is not in 0..65535"));
  }
  s.metrics_port = args.metrics_port.value_or(-1);
  if (s.metrics_port < -1 || s.metrics_port > 65535) {
    return Invalid("metrics_port", "must be -1, 0 or a port");
  }
  // CURVE keys from the environment only (petrel-launch --curve, a
  // Kubernetes Secret): docs/security.md.
  CurveKeySources keys;
  ReadCurveKeyEnvironment(getenv, &keys);
  PETREL_ASSIGN_OR_RETURN(s.van.curve, LoadCurveOptions(keys));
  PETREL_RETURN_IF_ERROR(
      CompleteCurveOptions(/*is_scheduler=*/false, &s.van.curve));
  return s;
}

}  // namespace petrel
