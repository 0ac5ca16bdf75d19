// petrelctl: an operator's view of and hand on a running Petrel job,
// through the scheduler's admin channel.
//
//   petrelctl --scheduler=HOST:PORT status       every node: role, rank, id,
//                                                host, state, last heartbeat,
//                                                requests/s, table rows
//   petrelctl --scheduler=HOST:PORT tables       rows and memory per table
//   petrelctl --scheduler=HOST:PORT checkpoint   take a checkpoint now
//   petrelctl --scheduler=HOST:PORT stop         stop the job cleanly
//   petrelctl --scheduler=HOST:PORT drain-server --node=ID
//                                                remove a server from a
//                                                running replicated job
//   petrelctl ... add-server                     not here: start one more
//                                                petrel-server --add_server
//
// --json prints the scheduler's reply as JSON instead of a table.
// When the cluster has CURVE keys, petrelctl needs an admin key: the same
// key flags (or PETREL_CURVE_* variables) as the daemons
// (docs/security.md).
// Exit codes: 0 done, 1 the scheduler did not answer or refused, 2 bad
// flags or command.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "gflags/gflags.h"
#include "glog/logging.h"

#include "base/cli.h"
#include "base/net_util.h"
#include "security/authorized_keys.h"
#include "security/curve_keys.h"
#include "tools/petrelctl/admin_client.h"
#include "tools/petrelctl/status_format.h"

DEFINE_string(scheduler, "", "The scheduler's address HOST:PORT. Required.");
DEFINE_string(auth_token, "",
              "The cluster's --auth_token, when it has one. Default empty.");
DEFINE_bool(json, false, "Print the reply as JSON. Default false.");
DEFINE_int32(timeout_s, 10,
             "Seconds to wait for the scheduler's answer (1..3600). Default "
             "10.");
DEFINE_string(curve_secret_key_file, "",
              "File holding petrelctl's CURVE secret key, one with role admin "
              "in the cluster's authorized-keys file (made by petrel-keygen). "
              "Required when the cluster has keys. Default: "
              "PETREL_CURVE_SECRET_KEY (the key itself), else off.");
DEFINE_string(curve_public_key_file, "",
              "File holding the matching CURVE public key; optional, checked "
              "when given. Default: PETREL_CURVE_PUBLIC_KEY.");
DEFINE_string(authorized_keys, "",
              "The cluster's authorized-keys file (admits the scheduler's "
              "answer; gives the scheduler's key). Required with CURVE. "
              "Default: PETREL_AUTHORIZED_KEYS.");
DEFINE_string(scheduler_public_key, "",
              "The scheduler's CURVE public key (Z85, or a file holding it). "
              "Default: PETREL_SCHEDULER_PUBLIC_KEY, else the one key with "
              "role scheduler in --authorized_keys.");
DEFINE_int32(node, -1,
             "drain-server: the node id of the server to drain (as "
             "`petrelctl status` lists it). Required there.");
DEFINE_string(bind, "",
              "Local address the scheduler sends the answer to. Default: the "
              "address that routes to the scheduler.");

namespace {

constexpr char kUsage[] =
    "shows and controls a running Petrel job.\n"
    "  petrelctl --scheduler=HOST:PORT [--json] status|tables|checkpoint|stop\n"
    "  petrelctl --scheduler=HOST:PORT drain-server --node=ID";

int Usage(const std::string& why) {
  std::fprintf(stderr, "petrelctl: %s (see --help)\n", why.c_str());
  return 2;
}

// The CURVE settings from the flags and PETREL_CURVE_* variables, as the
// daemons read theirs (security/curve_keys.h).
absl::StatusOr<petrel::CurveOptions> CurveFromFlags() {
  petrel::CurveKeySources sources;
  sources.secret_key_file = FLAGS_curve_secret_key_file;
  sources.public_key_file = FLAGS_curve_public_key_file;
  sources.authorized_keys_path = FLAGS_authorized_keys;
  sources.scheduler_public_key = FLAGS_scheduler_public_key;
  petrel::ReadCurveKeyEnvironment(&std::getenv, &sources);
  absl::StatusOr<petrel::CurveOptions> curve =
      petrel::LoadCurveOptions(sources);
  if (!curve.ok()) return curve.status();
  absl::Status completed =
      petrel::CompleteCurveOptions(/*is_scheduler=*/false, &*curve);
  if (!completed.ok()) return completed;
  return curve;
}

// The client's options from the flags; InvalidArgument naming the flag.
absl::StatusOr<petrel::AdminClientOptions> ClientOptionsFromFlags() {
  if (FLAGS_scheduler.empty()) {
    return absl::InvalidArgumentError("--scheduler=HOST:PORT is required");
  }
  absl::StatusOr<std::pair<std::string, int>> address =
      petrel::ParseHostPort(FLAGS_scheduler);
  if (!address.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--scheduler: ", address.status().message()));
  }
  if (FLAGS_timeout_s < 1 || FLAGS_timeout_s > 3600) {
    return absl::InvalidArgumentError("--timeout_s: must be in 1..3600");
  }
  absl::StatusOr<petrel::CurveOptions> curve = CurveFromFlags();
  if (!curve.ok()) return absl::InvalidArgumentError(curve.status().message());
  petrel::AdminClientOptions options;
  options.curve = *std::move(curve);
  options.scheduler_host = address->first;
  options.scheduler_port = address->second;
  options.auth_token = FLAGS_auth_token;
  options.bind_host = FLAGS_bind;
  options.timeout = absl::Seconds(FLAGS_timeout_s);
  options.node_id = FLAGS_node;
  return options;
}

// What petrelctl prints for `command`'s reply.
std::string FormatReply(const std::string& command,
                        const petrel::pb::AdminReply& reply) {
  if (FLAGS_json) return petrel::FormatJson(reply);
  if (command == "status") return petrel::FormatStatus(reply);
  if (command == "tables") return petrel::FormatTables(reply);
  if (command == "checkpoint") return "checkpoint requested\n";
  if (command == "drain-server") {
    return absl::StrCat("drain of node ", FLAGS_node,
                        " started: its key ranges are copied to the other "
                        "servers, then it stops (see the scheduler's log)\n");
  }
  return "stop requested: the job checkpoints (when it has a directory) and "
         "ends\n";
}

}  // namespace

int main(int argc, char** argv) {
  petrel::CliOptions cli;
  cli.name = "petrelctl";
  cli.usage = kUsage;
  cli.positional_arguments = true;  // the command
  // Warnings and errors only: the output is the reply (--minloglevel
  // overrides).
  FLAGS_minloglevel = 1;
  if (int code = petrel::ParseCommandLine(cli, &argc, &argv); code >= 0) {
    return code;
  }
  if (argc != 2)
    return Usage(
        "give one command: status, tables, checkpoint, stop or drain-server");
  const std::string command = argv[1];
  if (command == "drain" || command == "add-server") {
    std::fprintf(stderr,
                 "petrelctl: %s: not supported yet as a petrelctl command: "
                 "%s\n",
                 command.c_str(),
                 command == "drain"
                     ? "use drain-server --node=ID"
                     : "start one more petrel-server with --add_server");
    return 2;
  }
  petrel::pb::AdminCommand admin;
  if (command == "status" || command == "tables") {
    admin = petrel::pb::ADMIN_COMMAND_STATUS;
  } else if (command == "checkpoint") {
    admin = petrel::pb::ADMIN_COMMAND_CHECKPOINT;
  } else if (command == "stop") {
    admin = petrel::pb::ADMIN_COMMAND_STOP;
  } else if (command == "drain-server") {
    admin = petrel::pb::ADMIN_COMMAND_DRAIN_SERVER;
    if (FLAGS_node < 0) return Usage("drain-server needs --node=ID");
  } else {
    return Usage(absl::StrCat("unknown command '", command,
                              "'; use status, tables, checkpoint or stop"));
  }
  absl::StatusOr<petrel::AdminClientOptions> options = ClientOptionsFromFlags();
  if (!options.ok()) return Usage(std::string(options.status().message()));
  absl::StatusOr<petrel::pb::AdminReply> reply =
      petrel::AdminCall(*options, admin);
  if (!reply.ok()) {
    std::fprintf(stderr, "petrelctl: %s: %s\n", command.c_str(),
                 std::string(reply.status().message()).c_str());
    return reply.status().code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
  }
  std::fputs(FormatReply(command, *reply).c_str(), stdout);
  return 0;
}
