#include "node/node_flags.h"

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gflags/gflags.h"

#include "base/flag_check.h"
#include "base/net_util.h"
#include "base/status_macros.h"
#include "node/legacy_env.h"
#include "security/authorized_keys.h"
#include "security/curve_keys.h"

DEFINE_string(scheduler, "",
              "Scheduler address HOST:PORT (workers and servers). Default: "
              "DMLC_PS_ROOT_URI:DMLC_PS_ROOT_PORT.");
DEFINE_int32(port, 0,
             "Port to bind (0..65535); 0 takes a free port. Default 0 (or "
             "DMLC_PORT; on the scheduler DMLC_PS_ROOT_PORT).");
DEFINE_string(bind, "0.0.0.0",
              "Address to bind. Default 0.0.0.0 (all interfaces).");
DEFINE_string(
    advertise_host, "",
    "Host other nodes use to reach this one. Default: DMLC_NODE_HOST, "
    "else the address of --interface, else (scheduler) DMLC_PS_ROOT_URI, "
    "else the local address that routes to the scheduler.");
DEFINE_int32(advertise_port, 0,
             "Port other nodes use to reach this one, when it differs from "
             "the bound port (port forwarding, a proxy); 0: the bound port. "
             "Default 0.");
DEFINE_string(interface, "",
              "Network interface whose IPv4 address to advertise (e.g. eth0). "
              "Default: DMLC_INTERFACE.");
DEFINE_int32(num_servers, 1,
             "Servers in the job (1..16384). Default 1 (or DMLC_NUM_SERVER, or "
             "the job config's num_servers).");
DEFINE_int32(num_workers, 1,
             "Workers in the job (1..16384). Default 1 (or DMLC_NUM_WORKER, or "
             "the job config's num_workers).");
DEFINE_int32(rank, -1,
             "Rank to ask for within the role (-1..16383); -1 lets join order "
             "decide. Default -1 (or PETREL_RANK).");
DEFINE_bool(add_server, false,
            "petrel-server: join a running replicated job as one more server, "
            "which copies its fair share of the key ranges while the job goes "
            "on (docs/failures.md, \"Elastic servers\"). Default false.");
DEFINE_string(auth_token, "",
              "Shared secret every node presents when joining (sent in "
              "plaintext unless CURVE keys are configured). Default empty.");
DEFINE_string(curve_secret_key_file, "",
              "File holding this node's CURVE secret key (Z85; made by "
              "petrel-keygen; must not be accessible to group or others). "
              "Turns CURVE on. Default: PETREL_CURVE_SECRET_KEY (the key "
              "itself), else off (the cluster is open).");
DEFINE_string(curve_public_key_file, "",
              "File holding this node's CURVE public key; optional (derived "
              "from the secret key), checked against it when given. Default: "
              "PETREL_CURVE_PUBLIC_KEY.");
DEFINE_string(authorized_keys, "",
              "The cluster's authorized-keys file: the public keys this node "
              "admits and their roles; required with CURVE, re-read when it "
              "changes. Default: PETREL_AUTHORIZED_KEYS.");
DEFINE_string(scheduler_public_key, "",
              "The scheduler's CURVE public key (Z85, or a file holding it). "
              "Default: PETREL_SCHEDULER_PUBLIC_KEY, else the one key with "
              "role scheduler in --authorized_keys.");
DEFINE_int32(join_timeout_s, 60,
             "Seconds to wait for the cluster to form before giving up "
             "(1..86400). Default 60.");
DEFINE_int32(heartbeat_interval_ms, 1000,
             "Milliseconds between heartbeats to the scheduler (0..3600000); 0 "
             "disables. Default 1000.");
DEFINE_int32(scheduler_grace_s, 60,
             "A server or worker that has heard nothing from the scheduler "
             "for this many seconds stops (exit 1, \"scheduler HOST:PORT "
             "unreachable for N s; stopping\"); until then it keeps "
             "training and asks a restarted scheduler (--recover) to take "
             "it back (1..86400). Default 60.");
DEFINE_int64(max_message_bytes, int64_t{4} << 30,
             "Largest message accepted, in bytes (1 KiB .. 2^62; over 2 GiB is "
             "fine). Default 4 GiB.");
DEFINE_int32(max_frames, 16,
             "Most data frames per message (1..1024). Default 16.");
DEFINE_int64(non_member_bytes, int64_t{16} << 20,
             "Bytes a connection that is not a member of the cluster may have "
             "sent and not had delivered; over it the connection is cut "
             "(4 KiB .. 2^62). Must hold the first message a member sends on a "
             "new connection. Default 16 MiB.");
DEFINE_int64(non_member_total_bytes, int64_t{256} << 20,
             "The same, summed over all connections that are not members "
             "(>= --non_member_bytes). Default 256 MiB.");
DEFINE_int32(max_non_member_connections, 256,
             "Connections that are not members open at once; the oldest idle "
             "ones are cut beyond it (1..1048576; at most a quarter of the "
             "file descriptor limit). Default 256.");
DEFINE_int64(member_bytes, 0,
             "Bytes a member's connection may have received and not yet "
             "delivered as whole messages; over it the connection is cut. 0: "
             "--max_message_bytes plus 1 MiB. Default 0.");
DEFINE_int32(handshake_timeout_ms, 5000,
             "Milliseconds a new connection has to complete the ZeroMQ "
             "handshake (100..600000). Default 5000.");
DEFINE_int32(
    io_cpu, -1,
    "Pin this node's van I/O thread and ZeroMQ's I/O thread to this "
    "CPU, so that a request's hand-offs between them stay on one "
    "CPU (docs/threading.md, \"Thread placement\"); -1 leaves them to the "
    "kernel. Must be a CPU the process may run on. Default -1.");
DEFINE_int32(metrics_port, -1,
             "Port of the Prometheus /metrics endpoint (-1..65535); 0 takes a "
             "free port, -1 disables it. Default -1.");
DEFINE_string(metrics_bind, "",
              "Address the /metrics endpoint binds (0.0.0.0: all "
              "interfaces). Default empty: the node's own address "
              "(--advertise_host, else --bind unless 0.0.0.0, else the "
              "address that routes to the scheduler, else 127.0.0.1).");
DEFINE_int32(metrics_threads, 256,
             "Threads serving /metrics connections: how many idle or slow "
             "clients can be connected without delaying a scrape "
             "(1..4096). Default 256.");
DEFINE_int32(metrics_request_timeout_ms, 2000,
             "Close a /metrics connection whose request has not arrived "
             "within this many milliseconds (1..60000). Default 2000.");

namespace petrel {
namespace {

absl::Status Invalid(absl::string_view flag, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", why));
}

// Where a node finds the scheduler; the scheduler binds its port
// (PS-Lite: DMLC_PS_ROOT_PORT is the scheduler's port) and advertises its
// host (DMLC_PS_ROOT_URI).
absl::Status ApplySchedulerAddress(const LegacyEnv& env,
                                   PostofficeOptions& po) {
  if (env.root_uri.has_value()) po.scheduler_host = *env.root_uri;
  if (env.root_port.has_value()) po.scheduler_port = *env.root_port;
  std::string address = FLAGS_scheduler;
  const char* source = "--scheduler";
  if (address.empty()) {
    if (const char* s = std::getenv("PETREL_SCHEDULER"); s != nullptr) {
      address = s;
      source = "PETREL_SCHEDULER";
    }
  }
  if (!address.empty()) {
    absl::StatusOr<std::pair<std::string, int>> host_port =
        ParseHostPort(address);
    if (!host_port.ok()) return Annotate(host_port.status(), source);
    po.scheduler_host = host_port->first;
    po.scheduler_port = host_port->second;
  } else {
    source = env.root_uri.has_value() ? "DMLC_PS_ROOT_URI" : "--scheduler";
  }
  if (po.role == pb::ROLE_SCHEDULER) return absl::OkStatus();
  if (po.scheduler_port == 0) {
    return Invalid("scheduler",
                   "no scheduler address; pass --scheduler=HOST:PORT or set "
                   "DMLC_PS_ROOT_URI and DMLC_PS_ROOT_PORT");
  }
  // A name that does not resolve would only show as a join timeout.
  return Annotate(CheckHostResolves(po.scheduler_host), source);
}

absl::Status ApplyAdvertiseHost(const LegacyEnv& env, PostofficeOptions& po) {
  std::string interface = env.interface_name.value_or("");
  if (FlagIsSet("interface")) interface = FLAGS_interface;
  // PS-Lite's scheduler is reached at DMLC_PS_ROOT_URI.
  if (po.role == pb::ROLE_SCHEDULER && env.root_uri.has_value()) {
    po.advertise_host = *env.root_uri;
  }
  if (env.node_host.has_value()) po.advertise_host = *env.node_host;
  if (!interface.empty() && !FlagIsSet("advertise_host")) {
    absl::StatusOr<std::string> address = InterfaceAddress(interface);
    if (!address.ok()) return Invalid("interface", address.status().message());
    po.advertise_host = *address;
  }
  if (FlagIsSet("advertise_host")) po.advertise_host = FLAGS_advertise_host;
  if (!po.advertise_host.empty()) {
    PETREL_RETURN_IF_ERROR(
        Annotate(CheckHostResolves(po.advertise_host), "advertised host"));
  }
  PETREL_RETURN_IF_ERROR(
      CheckFlagRange("advertise_port", FLAGS_advertise_port, 0, 65535));
  po.advertise_port = FLAGS_advertise_port;
  return absl::OkStatus();
}

// One cluster size: the flag, else DMLC_NUM_*, else the job config, else
// the flag's default. `given` says whether anything but the default set it.
absl::Status ApplyCount(const char* flag, int flag_value,
                        std::optional<int> env_value, int config_value,
                        int* count, bool* given) {
  *count = flag_value;
  *given = true;
  if (!FlagIsSet(flag)) {
    if (env_value.has_value()) {
      *count = *env_value;
    } else if (config_value > 0) {
      *count = config_value;
    } else {
      *given = false;
    }
  }
  return CheckFlagRange(flag, *count, 1, 16384);
}

absl::Status ApplyCounts(const LegacyEnv& env, const ClusterDefaults& config,
                         PostofficeOptions& po) {
  PETREL_RETURN_IF_ERROR(ApplyCount("num_servers", FLAGS_num_servers,
                                    env.num_server, config.num_servers,
                                    &po.num_servers, &po.num_servers_given));
  PETREL_RETURN_IF_ERROR(ApplyCount("num_workers", FLAGS_num_workers,
                                    env.num_worker, config.num_workers,
                                    &po.num_workers, &po.num_workers_given));
  po.requested_rank = FLAGS_rank;
  po.add_server = FLAGS_add_server;
  if (!FlagIsSet("rank")) {
    if (const char* r = std::getenv("PETREL_RANK");
        r != nullptr && *r != '\0' &&
        !absl::SimpleAtoi(r, &po.requested_rank)) {
      return absl::InvalidArgumentError(
          absl::StrCat("PETREL_RANK='", r, "' is not an integer"));
    }
  }
  return CheckFlagRange("rank", po.requested_rank, -1, 16383);
}

// The port this node binds: --port, else (scheduler) DMLC_PS_ROOT_PORT,
// else DMLC_PORT, else 0 (a free port).
absl::StatusOr<int> BindPort(const LegacyEnv& env, pb::Role role) {
  int port = 0;
  if (FlagIsSet("port")) {
    port = FLAGS_port;
  } else if (role == pb::ROLE_SCHEDULER && env.root_port.has_value()) {
    port = *env.root_port;
  } else if (env.port.has_value()) {
    port = *env.port;
  }
  PETREL_RETURN_IF_ERROR(CheckFlagRange("port", port, 0, 65535));
  return port;
}

absl::Status ApplyCurve(pb::Role role, VanOptions& van) {
  CurveKeySources sources;
  sources.secret_key_file = FLAGS_curve_secret_key_file;
  sources.public_key_file = FLAGS_curve_public_key_file;
  sources.authorized_keys_path = FLAGS_authorized_keys;
  sources.scheduler_public_key = FLAGS_scheduler_public_key;
  ReadCurveKeyEnvironment(&std::getenv, &sources);
  PETREL_ASSIGN_OR_RETURN(van.curve, LoadCurveOptions(sources));
  return CompleteCurveOptions(role == pb::ROLE_SCHEDULER, &van.curve);
}

}  // namespace

absl::StatusOr<NodeSettings> NodeSettingsFromFlags(
    pb::Role role, const ClusterDefaults& config) {
  PETREL_ASSIGN_OR_RETURN(LegacyEnv env, ReadLegacyEnv(&std::getenv));
  NodeSettings s;
  PostofficeOptions& po = s.postoffice;
  po.role = role;
  if (env.role.has_value()) {
    const char* mine = role == pb::ROLE_SCHEDULER ? "scheduler"
                       : role == pb::ROLE_SERVER  ? "server"
                                                  : "worker";
    if (*env.role != mine) {
      return absl::InvalidArgumentError(absl::StrCat(
          "DMLC_ROLE=", *env.role, " but this program runs only as a ", mine));
    }
  }
  PETREL_RETURN_IF_ERROR(ApplySchedulerAddress(env, po));
  PETREL_RETURN_IF_ERROR(ApplyAdvertiseHost(env, po));
  PETREL_RETURN_IF_ERROR(ApplyCounts(env, config, po));
  po.auth_token = FLAGS_auth_token;
  PETREL_RETURN_IF_ERROR(
      CheckFlagRange("join_timeout_s", FLAGS_join_timeout_s, 1, 86400));
  po.join_timeout = absl::Seconds(FLAGS_join_timeout_s);
  PETREL_RETURN_IF_ERROR(CheckFlagRange(
      "heartbeat_interval_ms", FLAGS_heartbeat_interval_ms, 0, 3600000));
  po.heartbeat_interval = absl::Milliseconds(FLAGS_heartbeat_interval_ms);
  PETREL_RETURN_IF_ERROR(
      CheckFlagRange("scheduler_grace_s", FLAGS_scheduler_grace_s, 1, 86400));
  po.scheduler_grace = absl::Seconds(FLAGS_scheduler_grace_s);

  s.van.bind_host = FLAGS_bind;
  PETREL_ASSIGN_OR_RETURN(s.van.port, BindPort(env, role));
  PETREL_RETURN_IF_ERROR(CheckFlagRange(
      "max_message_bytes", FLAGS_max_message_bytes, 1024, int64_t{1} << 62));
  s.van.limits.max_message_bytes = FLAGS_max_message_bytes;
  PETREL_RETURN_IF_ERROR(
      CheckFlagRange("max_frames", FLAGS_max_frames, 1, 1024));
  s.van.limits.max_frames = FLAGS_max_frames;
  PETREL_RETURN_IF_ERROR(CheckFlagRange("non_member_bytes",
                                        FLAGS_non_member_bytes, int64_t{4096},
                                        int64_t{1} << 62));
  s.van.peers.non_member_bytes = FLAGS_non_member_bytes;
  PETREL_RETURN_IF_ERROR(
      CheckFlagRange("non_member_total_bytes", FLAGS_non_member_total_bytes,
                     FLAGS_non_member_bytes, int64_t{1} << 62));
  s.van.peers.non_member_total_bytes = FLAGS_non_member_total_bytes;
  PETREL_RETURN_IF_ERROR(CheckFlagRange("max_non_member_connections",
                                        FLAGS_max_non_member_connections, 1,
                                        1 << 20));
  s.van.peers.max_non_member_connections = FLAGS_max_non_member_connections;
  if (FLAGS_member_bytes != 0 && (FLAGS_member_bytes < (int64_t{1} << 20) ||
                                  FLAGS_member_bytes > (int64_t{1} << 62))) {
    return Invalid("member_bytes", "must be 0 or in 1 MiB..2^62");
  }
  s.van.peers.member_bytes = FLAGS_member_bytes;
  PETREL_RETURN_IF_ERROR(CheckFlagRange(
      "handshake_timeout_ms", FLAGS_handshake_timeout_ms, 100, 600000));
  s.van.peers.handshake_timeout =
      absl::Milliseconds(FLAGS_handshake_timeout_ms);
  PETREL_RETURN_IF_ERROR(CheckFlagRange("io_cpu", FLAGS_io_cpu, -1, 1023));
  s.van.io_cpu = FLAGS_io_cpu;
  PETREL_RETURN_IF_ERROR(
      CheckFlagRange("metrics_port", FLAGS_metrics_port, -1, 65535));
  s.metrics_port = FLAGS_metrics_port;
  s.metrics_bind = FLAGS_metrics_bind;
  PETREL_RETURN_IF_ERROR(
      CheckFlagRange("metrics_threads", FLAGS_metrics_threads, 1, 4096));
  s.metrics_http.num_threads = FLAGS_metrics_threads;
  PETREL_RETURN_IF_ERROR(CheckFlagRange("metrics_request_timeout_ms",
                                        FLAGS_metrics_request_timeout_ms, 1,
                                        60000));
  s.metrics_http.request_timeout =
      absl::Milliseconds(FLAGS_metrics_request_timeout_ms);
  PETREL_RETURN_IF_ERROR(ApplyCurve(role, s.van));
  s.warn_open_cluster = std::getenv(kOpenClusterWarnedVariable) == nullptr;
  return s;
}

}  // namespace petrel
