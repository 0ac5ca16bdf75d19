#include "van/node_flags.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "gflags/gflags.h"

#include "base/flag_check.h"
#include "base/net_util.h"
#include "base/status_macros.h"
#include "van/legacy_env.h"

DEFINE_string(scheduler, "",
              "Scheduler address HOST:PORT (workers and servers). Default: "
              "DMLC_PS_ROOT_URI:DMLC_PS_ROOT_PORT.");
DEFINE_int32(port, 0,
             "Port to bind; 0 takes a free port. Default 0 (or DMLC_PORT).");
DEFINE_string(bind, "0.0.0.0",
              "Address to bind. Default 0.0.0.0 (all interfaces).");
DEFINE_string(
    advertise_host, "",
    "Host other nodes use to reach this one. Default: DMLC_NODE_HOST, "
    "else the address of --interface, else the local address that "
    "routes to the scheduler.");
DEFINE_int32(advertise_port, 0,
             "Port other nodes use to reach this one, when it differs from "
             "the bound port (port forwarding, a proxy); 0: the bound port. "
             "Default 0.");
DEFINE_string(interface, "",
              "Network interface whose IPv4 address to advertise (e.g. eth0). "
              "Default: DMLC_INTERFACE.");
DEFINE_int32(num_servers, 1,
             "Servers in the job (>= 1). Default 1 (or DMLC_NUM_SERVER).");
DEFINE_int32(num_workers, 1,
             "Workers in the job (>= 1). Default 1 (or DMLC_NUM_WORKER).");
DEFINE_int32(rank, -1,
             "Rank to ask for within the role; -1 lets join order decide. "
             "Default -1 (or PETREL_RANK).");
DEFINE_string(auth_token, "",
              "Shared secret every node presents when joining. Default empty.");
DEFINE_int32(join_timeout_s, 60,
             "Seconds to wait for the cluster to form before giving up "
             "(1..86400). Default 60.");
DEFINE_int32(heartbeat_interval_ms, 1000,
             "Milliseconds between heartbeats to the scheduler; 0 disables. "
             "Default 1000.");
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
DEFINE_int32(metrics_port, -1,
             "Port of the Prometheus /metrics endpoint; 0 takes a free port, "
             "-1 disables it. Default -1.");

namespace petrel {
namespace {

absl::Status Invalid(absl::string_view flag, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", why));
}

absl::Status ApplySchedulerAddress(const LegacyEnv& env,
                                   PostofficeOptions& po) {
  if (env.root_uri.has_value()) po.scheduler_host = *env.root_uri;
  if (env.root_port.has_value()) po.scheduler_port = *env.root_port;
  std::string address = FLAGS_scheduler;
  if (address.empty()) {
    if (const char* s = std::getenv("PETREL_SCHEDULER"); s != nullptr)
      address = s;
  }
  if (!address.empty()) {
    PETREL_ASSIGN_OR_RETURN(auto host_port, ParseHostPort(address));
    po.scheduler_host = host_port.first;
    po.scheduler_port = host_port.second;
  }
  if (po.role != pb::ROLE_SCHEDULER && po.scheduler_port == 0) {
    return Invalid("scheduler",
                   "no scheduler address; pass --scheduler=HOST:PORT or set "
                   "DMLC_PS_ROOT_URI and DMLC_PS_ROOT_PORT");
  }
  return absl::OkStatus();
}

absl::Status ApplyAdvertiseHost(const LegacyEnv& env, PostofficeOptions& po) {
  std::string interface = env.interface_name.value_or("");
  if (FlagIsSet("interface")) interface = FLAGS_interface;
  if (env.node_host.has_value()) po.advertise_host = *env.node_host;
  if (!interface.empty() && !FlagIsSet("advertise_host")) {
    absl::StatusOr<std::string> address = InterfaceAddress(interface);
    if (!address.ok()) return Invalid("interface", address.status().message());
    po.advertise_host = *address;
  }
  if (FlagIsSet("advertise_host")) po.advertise_host = FLAGS_advertise_host;
  if (FLAGS_advertise_port < 0 || FLAGS_advertise_port > 65535) {
    return Invalid("advertise_port",
                   absl::StrCat(FLAGS_advertise_port, " is not in 0..65535"));
  }
  po.advertise_port = FLAGS_advertise_port;
  return absl::OkStatus();
}

absl::Status ApplyCounts(const LegacyEnv& env, PostofficeOptions& po) {
  po.num_servers = env.num_server.value_or(FLAGS_num_servers);
  po.num_workers = env.num_worker.value_or(FLAGS_num_workers);
  if (FlagIsSet("num_servers")) po.num_servers = FLAGS_num_servers;
  if (FlagIsSet("num_workers")) po.num_workers = FLAGS_num_workers;
  if (po.num_servers < 1 || po.num_servers > 16384) {
    return Invalid("num_servers",
                   absl::StrCat(po.num_servers, " is not in 1..16384"));
  }
  if (po.num_workers < 1 || po.num_workers > 16384) {
    return Invalid("num_workers",
                   absl::StrCat(po.num_workers, " is not in 1..16384"));
  }
  po.requested_rank = FLAGS_rank;
  if (!FlagIsSet("rank")) {
    if (const char* r = std::getenv("PETREL_RANK");
        r != nullptr && *r != '\0') {
      po.requested_rank = std::atoi(r);
    }
  }
  return absl::OkStatus();
}

}  // namespace

int ParseNodeCommandLine(int* argc, char*** argv) {
  const std::string program = (*argv)[0];
  const std::string name = program.substr(program.rfind('/') + 1);
  if (absl::Status s = CheckCommandLineFlags(*argc, *argv); !s.ok()) {
    std::fprintf(stderr, "%s: %s (see --help)\n", name.c_str(),
                 std::string(s.message()).c_str());
    return 2;
  }
  gflags::ParseCommandLineNonHelpFlags(argc, argv, /*remove_flags=*/true);
  std::string help;
  if (gflags::GetCommandLineOption("help", &help) && help == "true") {
    gflags::ShowUsageWithFlags(program.c_str());
    return 0;
  }
  gflags::HandleCommandLineHelpFlags();  // --helpfull, --version, ...
  if (*argc > 1) {
    std::fprintf(stderr, "%s: unexpected argument '%s' (see --help)\n",
                 name.c_str(), (*argv)[1]);
    return 2;
  }
  return -1;
}

absl::StatusOr<NodeSettings> NodeSettingsFromFlags(pb::Role role) {
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
          "DMLC_ROLE=", *env.role, " but this program is a ", mine));
    }
  }
  PETREL_RETURN_IF_ERROR(ApplySchedulerAddress(env, po));
  PETREL_RETURN_IF_ERROR(ApplyAdvertiseHost(env, po));
  PETREL_RETURN_IF_ERROR(ApplyCounts(env, po));
  po.auth_token = FLAGS_auth_token;
  if (FLAGS_join_timeout_s < 1 || FLAGS_join_timeout_s > 86400) {
    return Invalid("join_timeout_s", "must be in 1..86400");
  }
  po.join_timeout = absl::Seconds(FLAGS_join_timeout_s);
  if (FLAGS_heartbeat_interval_ms < 0) {
    return Invalid("heartbeat_interval_ms", "must be >= 0");
  }
  po.heartbeat_interval = absl::Milliseconds(FLAGS_heartbeat_interval_ms);
  if (FLAGS_scheduler_grace_s < 1 || FLAGS_scheduler_grace_s > 86400) {
    return Invalid("scheduler_grace_s", "must be in 1..86400");
  }
  po.scheduler_grace = absl::Seconds(FLAGS_scheduler_grace_s);

  s.van.bind_host = FLAGS_bind;
  s.van.port = env.port.value_or(0);
  if (FlagIsSet("port") || !env.port.has_value()) s.van.port = FLAGS_port;
  if (s.van.port < 0 || s.van.port > 65535) {
    return Invalid("port", absl::StrCat(s.van.port, " is not in 0..65535"));
  }
  if (FLAGS_max_message_bytes < 1024 ||
      FLAGS_max_message_bytes > (int64_t{1} << 62)) {
    return Invalid("max_message_bytes", "must be in 1024..2^62");
  }
  s.van.limits.max_message_bytes = FLAGS_max_message_bytes;
  if (FLAGS_max_frames < 1 || FLAGS_max_frames > 1024) {
    return Invalid("max_frames", "must be in 1..1024");
  }
  s.van.limits.max_frames = FLAGS_max_frames;
  if (FLAGS_metrics_port < -1 || FLAGS_metrics_port > 65535) {
    return Invalid("metrics_port", "must be -1, 0 or a port");
  }
  s.metrics_port = FLAGS_metrics_port;
  return s;
}

}  // namespace petrel
