// petrel-launch: runs a Petrel job (scheduler, servers and workers) on this
// machine. See kUsage below and tools/launch/launcher.h.

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <signal.h>
#include <unistd.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gflags/gflags.h"
#include "glog/logging.h"

#include "base/config_file.h"
#include "base/flag_check.h"
#include "base/status_macros.h"
#include "job/job_check.h"
#include "proto/job.pb.h"
#include "tools/launch/executable_path.h"
#include "tools/launch/launcher.h"

DEFINE_int32(num_servers, 1, "Number of petrel-server processes (>= 1).");
DEFINE_int32(num_workers, 1,
             "Number of worker processes, each running COMMAND (>= 1).");
DEFINE_string(bin_dir, "",
              "Directory holding petrel-scheduler and petrel-server, and "
              "searched for COMMAND when it is not on PATH. Empty (the "
              "default) means the directory holding petrel-launch.");
DEFINE_string(host, "127.0.0.1",
              "Address the scheduler and servers advertise and the workers "
              "connect to.");
DEFINE_int32(timeout_s, 0,
             "Kill the whole job and exit 1 if it runs longer than this many "
             "seconds. 0 (the default) means no limit.");
DEFINE_int32(listen_timeout_s, 30,
             "Seconds the scheduler has to print its PETREL_LISTEN line.");
DEFINE_int32(drain_timeout_s, 60,
             "Seconds the scheduler and servers have to exit by themselves "
             "after every worker exited 0; then they get SIGTERM.");
DEFINE_string(config, "",
              "A job config file (protobuf text format, proto/job.proto). The "
              "cluster size comes from it unless --num_servers/--num_workers "
              "are given, every server gets --config, and without a COMMAND "
              "the workers run `petrel-worker --job=train --config=FILE`. "
              "Default empty.");
DEFINE_string(train, "",
              "With --config and no COMMAND: training files (comma-separated) "
              "passed to the workers, overriding the config's data.train.");
DEFINE_string(
    test, "",
    "With --config and no COMMAND: test files, overriding data.test.");
DEFINE_int32(epochs, 0,
             "With --config and no COMMAND: epochs, overriding train.epochs; "
             "0 keeps the config's.");
DEFINE_string(device, "",
              "With --config and no COMMAND: where the workers compute (auto, "
              "cpu or cuda), overriding the config's train.device. Default "
              "empty: the config's, else auto.");
DEFINE_string(checkpoint_dir, "",
              "With --config: where checkpoints go, passed to every process "
              "(overrides checkpoint.dir). Default empty.");
DEFINE_string(restore_from, "",
              "With --config: a checkpoint directory or 'latest' the job "
              "continues from, passed to every process (overrides "
              "checkpoint.restore_from). Default empty.");
DEFINE_int32(stop_timeout_s, 120,
             "With --config, the first SIGINT/SIGTERM asks the scheduler to "
             "stop the job (after a checkpoint when it has a checkpoint "
             "directory); the job is killed if it has not exited this many "
             "seconds later, or on a second signal. Default 120.");
DEFINE_int32(grace_period_s, 5,
             "Seconds between SIGTERM and SIGKILL when stopping processes.");

namespace {

constexpr char kUsage[] =
    "runs a Petrel job on this machine.\n"
    "Usage: petrel-launch --num_servers=S --num_workers=W [--bin_dir=DIR]\n"
    "           [--host=127.0.0.1] [--timeout_s=0] -- COMMAND [ARGS...]\n"
    "       petrel-launch --config=JOB.textproto [--train=F] [--test=F]\n"
    "           [--epochs=N] [--device=auto|cpu|cuda]\n"
    "           [--checkpoint_dir=DIR] [--restore_from=DIR|latest]\n"
    "Starts DIR/petrel-scheduler, then S x DIR/petrel-server and W workers\n"
    "running COMMAND with DMLC_ROLE, DMLC_PS_ROOT_URI, DMLC_PS_ROOT_PORT,\n"
    "DMLC_NUM_SERVER, DMLC_NUM_WORKER, DMLC_NODE_HOST, PETREL_RANK and\n"
    "PETREL_SCHEDULER set. Child output goes to stdout prefixed with\n"
    "\"[scheduler] \", \"[server i] \" or \"[worker i] \".\n"
    "With --config, SIGINT/SIGTERM stops the job gracefully (a checkpoint\n"
    "first when it has a checkpoint directory); a second signal kills it,\n"
    "and a worker killed by a signal does not stop the job (the others\n"
    "train its data).\n"
    "Exit status: 0 when every process exited 0 (a killed worker aside),\n"
    "1 when one failed or a\n"
    "timeout passed, 2 for bad flags or when a process of the failed job\n"
    "exited 2 (bad input), 130/143 after SIGINT/SIGTERM.";

constexpr int kExitUsage = 2;

int UsageError(const std::string& message) {
  std::fprintf(stderr, "petrel-launch: %s (see --help)\n", message.c_str());
  return kExitUsage;
}

// The directory holding this executable, or "" if it cannot be found.
std::string SelfDirectory() {
  char path[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (n <= 0) return "";
  std::string self(path, static_cast<size_t>(n));
  size_t slash = self.rfind('/');
  return slash == std::string::npos ? "." : self.substr(0, slash);
}

// gflags exits 1 on an unknown flag; check names first so that every bad
// flag exits 2. Returns the first unknown flag, or "" when all are known.
petrel::Launcher::Options OptionsFromFlags(std::vector<std::string> command) {
  petrel::Launcher::Options options;
  options.num_servers = FLAGS_num_servers;
  options.num_workers = FLAGS_num_workers;
  options.bin_dir = FLAGS_bin_dir.empty() ? SelfDirectory() : FLAGS_bin_dir;
  options.host = FLAGS_host;
  options.command = std::move(command);
  const char* path = std::getenv("PATH");
  options.search_path = path != nullptr ? path : "";
  options.job_timeout = absl::Seconds(FLAGS_timeout_s);
  options.listen_timeout = absl::Seconds(FLAGS_listen_timeout_s);
  options.drain_timeout = absl::Seconds(FLAGS_drain_timeout_s);
  options.grace_period = absl::Seconds(FLAGS_grace_period_s);
  options.handle_signals = true;
  return options;
}

// Applies --config: cluster size, server arguments and the default worker
// command. InvalidArgument names the file and line of a bad config.
absl::Status ApplyJobConfig(petrel::Launcher::Options& options) {
  if (FLAGS_config.empty()) return absl::OkStatus();
  petrel::pb::JobConfig job;
  absl::Status s = petrel::ParseTextProtoFile(FLAGS_config, &job);
  if (!s.ok()) return s;
  if (!petrel::FlagIsSet("num_servers") && job.num_servers() > 0) {
    options.num_servers = job.num_servers();
  }
  if (!petrel::FlagIsSet("num_workers") && job.num_workers() > 0) {
    options.num_workers = job.num_workers();
  }
  s = petrel::CheckJobConfig(job, options.num_servers,
                             petrel::PhysicalMemoryBytes());
  if (!s.ok()) return petrel::Annotate(s, FLAGS_config);
  s = petrel::CheckOneMachineMemory(job, options.num_servers,
                                    options.num_workers,
                                    petrel::PhysicalMemoryBytes());
  if (!s.ok()) return petrel::Annotate(s, FLAGS_config);
  options.server_args.push_back("--config=" + FLAGS_config);
  options.scheduler_args.push_back("--config=" + FLAGS_config);
  options.graceful_stop = true;
  options.survive_worker_kills = true;
  options.stop_timeout = absl::Seconds(FLAGS_stop_timeout_s);
  std::vector<std::string> checkpoint_args;
  if (!FLAGS_checkpoint_dir.empty()) {
    checkpoint_args.push_back("--checkpoint_dir=" + FLAGS_checkpoint_dir);
  }
  if (!FLAGS_restore_from.empty()) {
    checkpoint_args.push_back("--restore_from=" + FLAGS_restore_from);
  }
  for (auto* args : {&options.server_args, &options.scheduler_args}) {
    args->insert(args->end(), checkpoint_args.begin(), checkpoint_args.end());
  }
  if (!options.command.empty()) {
    if (!checkpoint_args.empty()) {
      return absl::InvalidArgumentError(
          "--checkpoint_dir and --restore_from need the default worker "
          "command (no COMMAND)");
    }
    return absl::OkStatus();
  }
  options.command = {options.bin_dir + "/petrel-worker", "--job=train",
                     "--config=" + FLAGS_config};
  options.command.insert(options.command.end(), checkpoint_args.begin(),
                         checkpoint_args.end());
  if (!FLAGS_train.empty()) options.command.push_back("--train=" + FLAGS_train);
  if (!FLAGS_test.empty()) options.command.push_back("--test=" + FLAGS_test);
  if (FLAGS_epochs > 0) {
    options.command.push_back(absl::StrCat("--epochs=", FLAGS_epochs));
  }
  if (!FLAGS_device.empty()) {
    options.command.push_back("--device=" + FLAGS_device);
  }
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  // Everything after "--" is the worker command; gflags never sees it.
  int flag_argc = argc;
  std::vector<std::string> command;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--") == 0) {
      flag_argc = i;
      command.assign(argv + i + 1, argv + argc);
      break;
    }
  }
  gflags::SetUsageMessage(kUsage);
  if (absl::Status s = petrel::CheckCommandLineFlags(flag_argc, argv);
      !s.ok()) {
    return UsageError(std::string(s.message()));
  }
  gflags::ParseCommandLineNonHelpFlags(&flag_argc, &argv, true);
  std::string help;
  if (gflags::GetCommandLineOption("help", &help) && help == "true") {
    gflags::ShowUsageWithFlagsRestrict(argv[0], "launch_main");
    return 0;
  }
  gflags::HandleCommandLineHelpFlags();
  if (flag_argc > 1) {
    if (!command.empty()) {
      return UsageError(
          absl::StrCat("unexpected argument '", argv[1], "' before '--'"));
    }
    command.assign(argv + 1, argv + flag_argc);
  }
  google::InitGoogleLogging(argv[0]);
  FLAGS_logtostderr = true;

  if ((!FLAGS_checkpoint_dir.empty() || !FLAGS_restore_from.empty()) &&
      FLAGS_config.empty()) {
    return UsageError("--checkpoint_dir and --restore_from need --config");
  }
  if (FLAGS_stop_timeout_s < 1)
    return UsageError("--stop_timeout_s must be >= 1");
  if (FLAGS_timeout_s < 0 || FLAGS_listen_timeout_s < 1 ||
      FLAGS_drain_timeout_s < 0 || FLAGS_grace_period_s < 0) {
    return UsageError(
        "--timeout_s, --drain_timeout_s and --grace_period_s must be >= 0 "
        "and --listen_timeout_s >= 1");
  }
  petrel::Launcher::Options options = OptionsFromFlags(std::move(command));
  if (absl::Status s = ApplyJobConfig(options); !s.ok()) {
    return UsageError(std::string(s.message()));
  }
  if (absl::Status s = petrel::Launcher::Validate(options); !s.ok()) {
    return UsageError(std::string(s.message()));
  }
  if (absl::StatusOr<std::string> resolved = petrel::ResolveCommand(
          options.command[0], options.search_path, options.bin_dir);
      !resolved.ok()) {
    return UsageError(std::string(resolved.status().message()));
  }
  // A closed stdout must not kill the launcher before it stops the job.
  signal(SIGPIPE, SIG_IGN);
  petrel::Launcher launcher(std::move(options));
  return launcher.Run();
}
