// petrelctl: an operator's view of and hand on a running Petrel job,
// through the scheduler's admin channel.
//
//   petrelctl --scheduler=HOST:PORT status       every node: role, rank, id,
//                                                host, state, last heartbeat,
//                                                requests/s, table rows
//   petrelctl --scheduler=HOST:PORT tables       rows and memory per table
//   petrelctl --scheduler=HOST:PORT checkpoint   take a checkpoint now
//   petrelctl --scheduler=HOST:PORT stop         stop the job cleanly
//   petrelctl ... drain | add-server             not supported yet
//
// --json prints the scheduler's reply as JSON instead of a table.
// Exit codes: 0 done, 1 the scheduler did not answer or refused, 2 bad
// flags or command.
#include <cstdio>
#include <string>

#include "absl/strings/str_cat.h"
#include "gflags/gflags.h"
#include "glog/logging.h"

#include "base/flag_check.h"
#include "base/net_util.h"
#include "tools/petrelctl/admin_client.h"
#include "tools/petrelctl/status_format.h"

DEFINE_string(scheduler, "", "The scheduler's address HOST:PORT. Required.");
DEFINE_string(auth_token, "",
              "The cluster's --auth_token, when it has one. Default empty.");
DEFINE_bool(json, false, "Print the reply as JSON. Default false.");
DEFINE_int32(timeout_s, 10,
             "Seconds to wait for the scheduler's answer (1..3600). Default "
             "10.");
DEFINE_string(bind, "",
              "Local address the scheduler sends the answer to. Default: the "
              "address that routes to the scheduler.");

namespace {

constexpr char kUsage[] =
    "shows and controls a running Petrel job.\n"
    "  petrelctl --scheduler=HOST:PORT [--json] status|tables|checkpoint|stop";

int Usage(const std::string& why) {
  std::fprintf(stderr, "petrelctl: %s (see --help)\n", why.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  gflags::SetUsageMessage(kUsage);
  if (absl::Status s = petrel::CheckCommandLineFlags(argc, argv); !s.ok()) {
    return Usage(std::string(s.message()));
  }
  gflags::ParseCommandLineFlags(&argc, &argv, /*remove_flags=*/true);
  FLAGS_logtostderr = true;
  FLAGS_minloglevel = 1;  // warnings and errors only: the output is the reply
  google::InitGoogleLogging(argv[0]);
  if (argc != 2)
    return Usage("give one command: status, tables, checkpoint or stop");
  const std::string command = argv[1];
  if (command == "drain" || command == "add-server") {
    std::fprintf(stderr,
                 "petrelctl: %s: not supported yet: the servers of a job are "
                 "fixed when it starts (no elastic servers)\n",
                 command.c_str());
    return 2;
  }
  petrel::pb::AdminCommand admin;
  if (command == "status" || command == "tables") {
    admin = petrel::pb::ADMIN_COMMAND_STATUS;
  } else if (command == "checkpoint") {
    admin = petrel::pb::ADMIN_COMMAND_CHECKPOINT;
  } else if (command == "stop") {
    admin = petrel::pb::ADMIN_COMMAND_STOP;
  } else {
    return Usage(absl::StrCat("unknown command '", command,
                              "'; use status, tables, checkpoint or stop"));
  }
  if (FLAGS_scheduler.empty())
    return Usage("--scheduler=HOST:PORT is required");
  absl::StatusOr<std::pair<std::string, int>> address =
      petrel::ParseHostPort(FLAGS_scheduler);
  if (!address.ok()) {
    return Usage(absl::StrCat("--scheduler: ", address.status().message()));
  }
  if (FLAGS_timeout_s < 1 || FLAGS_timeout_s > 3600) {
    return Usage("--timeout_s: must be in 1..3600");
  }
  petrel::AdminClientOptions options;
  options.scheduler_host = address->first;
  options.scheduler_port = address->second;
  options.auth_token = FLAGS_auth_token;
  options.bind_host = FLAGS_bind;
  options.timeout = absl::Seconds(FLAGS_timeout_s);
  absl::StatusOr<petrel::pb::AdminReply> reply =
      petrel::AdminCall(options, admin);
  if (!reply.ok()) {
    std::fprintf(stderr, "petrelctl: %s: %s\n", command.c_str(),
                 std::string(reply.status().message()).c_str());
    return reply.status().code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
  }
  std::string out;
  if (FLAGS_json) {
    out = petrel::FormatJson(*reply);
  } else if (command == "status") {
    out = petrel::FormatStatus(*reply);
  } else if (command == "tables") {
    out = petrel::FormatTables(*reply);
  } else if (command == "checkpoint") {
    out = "checkpoint requested\n";
  } else {
    out =
        "stop requested: the job checkpoints (when it has a directory) and "
        "ends\n";
  }
  std::fputs(out.c_str(), stdout);
  return 0;
}
