// petrel-launch: runs a Petrel job (scheduler, servers and workers) on this
// machine. See kUsage below and tools/launch/launcher.h.

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <signal.h>
#include <unistd.h>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "gflags/gflags.h"
#include "glog/logging.h"

#include "base/cli.h"
#include "base/config_file.h"
#include "base/flag_check.h"
#include "base/net_util.h"
#include "base/status_macros.h"
#include "cluster/replica_map.h"
#include "job/job_check.h"
#include "node/node_runtime.h"
#include "proto/job.pb.h"
#include "tools/launch/ephemeral_keys.h"
#include "tools/launch/executable_path.h"
#include "tools/launch/hosts_file.h"
#include "tools/launch/launcher.h"
#include "tools/launch/slurm_launch.h"

extern char** environ;

DEFINE_int32(num_servers, 1, "Number of petrel-server processes (>= 1).");
DEFINE_int32(replicas, 0,
             "Copies of each key range, passed to the scheduler's "
             "--replicas (docs/failures.md): 2 or more survive a server's "
             "death, 1 keeps one copy. Default 0: the config's replicas, "
             "else 2 when there are at least 2 servers.");
DEFINE_bool(replace_dead_servers, false,
            "With 2 or more replicas: when a server process is killed and "
            "the scheduler failed its key ranges over, start a replacement "
            "petrel-server with the same flags, which copies those ranges "
            "and restores the replication factor (docs/failures.md, "
            "\"Replacement servers\"); at most --max_server_replacements.");
DEFINE_int32(max_server_replacements, 10,
             "Most replacement servers --replace_dead_servers starts in a "
             "job (>= 0).");
DEFINE_bool(restart_scheduler, true,
            "When the scheduler process is killed (kill -9, the OOM killer, "
            "a crash) while workers run, start it again with --recover on "
            "the same port; the nodes rejoin it and the job goes on "
            "(docs/failures.md, \"The scheduler's death\"); at most "
            "--max_scheduler_restarts. false: its death ends the job.");
DEFINE_int32(max_scheduler_restarts, 3,
             "Most scheduler restarts --restart_scheduler makes in a job "
             "(>= 0).");
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
DEFINE_string(progress_csv, "",
              "Where the scheduler writes the job's progress and evaluations "
              "as CSV (docs/training.md; tools/petrel-plot draws it); "
              "overrides train.progress_csv. Default empty: the config's, "
              "else none.");
DEFINE_bool(curve, false,
            "Run the job with CURVE security on, with a fresh keypair per "
            "process made at start (given to each through PETREL_CURVE_* "
            "variables) and an authorized-keys file in a private temporary "
            "directory removed at the end (docs/security.md). Default false.");
DEFINE_int32(stop_timeout_s, 120,
             "With --config, the first SIGINT/SIGTERM asks the scheduler to "
             "stop the job (after a checkpoint when it has a checkpoint "
             "directory); the job is killed if it has not exited this many "
             "seconds later, or on a second signal. Default 120.");
DEFINE_bool(metrics, false,
            "Serve /metrics from every process started (--metrics_port=0: "
            "free ports) and print each one's address (with a COMMAND "
            "other than petrel-worker: the scheduler and servers only). "
            "Default false.");
DEFINE_int32(
    server_io_cpu, -1,
    "Starts every petrel-server with --io_cpu=N: its van's and "
    "ZeroMQ's I/O threads pinned to CPU N (docs/threading.md, \"Thread "
    "placement\"). Default -1: not pinned.");
DEFINE_int32(grace_period_s, 5,
             "Seconds between SIGTERM and SIGKILL when stopping processes.");
DEFINE_bool(slurm, false,
            "Run as one task of a Slurm job (docs/clusters.md): under srun, "
            "become the process SLURM_PROCID names (task 0 the scheduler on "
            "the first host, then the servers, then the workers); outside "
            "a step (in the batch script) re-run this command under srun. "
            "The workers are the tasks left after the scheduler and "
            "--num_servers servers. Default false.");
DEFINE_int32(scheduler_port, 0,
             "With --slurm: the port the scheduler listens on, the same for "
             "every task. 0 (the default) derives it from the job id: "
             "20000 + SLURM_JOB_ID % 20000.");
DEFINE_string(hosts, "",
              "A hosts file (docs/clusters.md): run the processes on these "
              "hosts over ssh, one 'HOST [slots=N] "
              "[roles=scheduler,server,worker]' per line. Default empty: "
              "everything runs on this machine.");
DEFINE_int32(ssh_port, 0,
             "With --hosts: the port ssh connects to. 0 (the default) leaves "
             "it to ssh (~/.ssh/config, else 22).");
DEFINE_string(ssh_options, "",
              "With --hosts: more ssh arguments, separated by spaces (e.g. "
              "'-i KEY -o User=petrel'). ssh always runs with -T and "
              "BatchMode=yes. Default empty.");

namespace {

constexpr char kUsage[] =
    "runs a Petrel job on this machine, on hosts over ssh (--hosts) or\n"
    "as the tasks of a Slurm job (--slurm).\n"
    "Usage: petrel-launch --num_servers=S --num_workers=W [--bin_dir=DIR]\n"
    "           [--host=127.0.0.1] [--timeout_s=0] -- COMMAND [ARGS...]\n"
    "       petrel-launch --config=JOB.textproto [--train=F] [--test=F]\n"
    "           [--epochs=N] [--device=auto|cpu|cuda]\n"
    "           [--checkpoint_dir=DIR] [--restore_from=DIR|latest]\n"
    "           [--progress_csv=FILE]\n"
    "       petrel-launch --hosts=FILE [--ssh_port=P] [--ssh_options=O] ...\n"
    "       srun petrel-launch --slurm [--scheduler_port=P] ...\n"
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
    "2 for bad flags, or when a process failed with exit 2 (bad config or\n"
    "data), 1 when one failed otherwise or a timeout passed, 130/143\n"
    "after SIGINT/SIGTERM. With --slurm, the process's own exit status.";

constexpr int kExitUsage = 2;

int UsageError(const std::string& message) {
  std::fprintf(stderr, "petrel-launch: %s (see --help)\n", message.c_str());
  return kExitUsage;
}

// This executable's path, or "" if it cannot be found.
std::string SelfPath() {
  char path[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (n <= 0) return "";
  return std::string(path, static_cast<size_t>(n));
}

// The directory holding this executable, or "" if it cannot be found.
std::string SelfDirectory() {
  std::string self = SelfPath();
  if (self.empty()) return "";
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
  if (!FLAGS_progress_csv.empty()) {
    options.scheduler_args.push_back("--progress_csv=" + FLAGS_progress_csv);
  }
  if (FLAGS_server_io_cpu >= 0) {
    options.server_args.push_back(
        absl::StrCat("--io_cpu=", FLAGS_server_io_cpu));
  }
  if (petrel::FlagIsSet("replicas")) {
    options.scheduler_args.push_back(
        absl::StrCat("--replicas=", FLAGS_replicas));
  }
  // The scheduler decides whether a killed server is survived.
  options.survive_server_kills =
      petrel::ReplicaMap::Resolve(FLAGS_replicas, FLAGS_num_servers) >= 2;
  options.replace_dead_servers = FLAGS_replace_dead_servers;
  options.max_server_replacements = FLAGS_max_server_replacements;
  options.restart_killed_scheduler = FLAGS_restart_scheduler;
  options.max_scheduler_restarts = FLAGS_max_scheduler_restarts;
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
  if (!FLAGS_slurm && FLAGS_hosts.empty()) {
    s = petrel::CheckOneMachineMemory(job, options.num_servers,
                                      options.num_workers,
                                      petrel::PhysicalMemoryBytes());
    if (!s.ok()) return petrel::Annotate(s, FLAGS_config);
  }
  options.server_args.push_back("--config=" + FLAGS_config);
  options.scheduler_args.push_back("--config=" + FLAGS_config);
  options.graceful_stop = true;
  options.survive_worker_kills = true;
  if (!petrel::FlagIsSet("replicas")) {
    options.survive_server_kills =
        petrel::ReplicaMap::Resolve(job.replicas(), options.num_servers) >= 2;
  }
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
  options.worker_takes_node_flags = true;
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

// Applies --hosts and the ssh flags.
absl::Status ApplyHosts(petrel::Launcher::Options& options) {
  if (FLAGS_hosts.empty()) return absl::OkStatus();
  if (petrel::FlagIsSet("host")) {
    return absl::InvalidArgumentError(
        "--host and --hosts exclude each other (each host's address comes "
        "from the hosts file)");
  }
  absl::StatusOr<std::vector<petrel::HostEntry>> hosts =
      petrel::ReadHostsFile(FLAGS_hosts);
  if (!hosts.ok()) return hosts.status();
  options.hosts = *std::move(hosts);
  if (FLAGS_ssh_port < 0 || FLAGS_ssh_port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("--ssh_port=", FLAGS_ssh_port, " is not in 0..65535"));
  }
  options.ssh.port = FLAGS_ssh_port;
  options.ssh.extra_args = absl::StrSplit(
      FLAGS_ssh_options, absl::ByAnyChar(" \t"), absl::SkipEmpty());
  options.ssh.grace_period = options.grace_period;
  char cwd[PATH_MAX];
  if (getcwd(cwd, sizeof(cwd)) != nullptr) options.ssh.working_dir = cwd;
  for (char** e = environ; *e != nullptr; ++e) {
    absl::string_view entry(*e);
    if (!absl::StartsWith(entry, "PETREL_") &&
        !absl::StartsWith(entry, "DMLC_") &&
        !absl::StartsWith(entry, "GLOG_")) {
      continue;
    }
    std::pair<std::string, std::string> kv =
        absl::StrSplit(entry, absl::MaxSplits('=', 1));
    options.remote_env.push_back(std::move(kv));
  }
  return absl::OkStatus();
}

// --slurm: in an srun step, becomes this task's process (exec); outside
// one, re-runs the command line `args` under srun. Returns only on error.
int RunSlurmTask(petrel::Launcher::Options options,
                 const std::vector<std::string>& args) {
  if (!FLAGS_hosts.empty())
    return UsageError("--slurm and --hosts exclude each other");
  absl::StatusOr<petrel::SlurmTask> task =
      petrel::SlurmTaskFromEnv(&std::getenv);
  if (!task.ok()) return UsageError(std::string(task.status().message()));
  if (FLAGS_scheduler_port < 0 || FLAGS_scheduler_port > 65535) {
    return UsageError("--scheduler_port must be in 0..65535");
  }
  int port = FLAGS_scheduler_port;
  if (!task->in_step && port == 0 && task->node_name == task->hosts.front()) {
    // The batch script runs on the first host, the scheduler's.
    if (absl::StatusOr<int> free = petrel::FreeTcpPort(); free.ok()) {
      port = *free;
    }
  }
  port = petrel::SlurmSchedulerPort(*task, port);
  absl::StatusOr<petrel::ExecSpec> spec =
      petrel::SlurmTaskSpec(*task, options, port);
  if (!spec.ok()) return UsageError(std::string(spec.status().message()));
  std::vector<std::string> argv = spec->argv;
  if (!task->in_step) {
    argv = petrel::SrunArgv(SelfPath(), port, args);
  } else {
    std::fprintf(stderr, "petrel-launch: Slurm task %d of %d runs the %s\n",
                 task->proc_id, task->num_tasks, spec->role.c_str());
    for (const auto& [key, value] : spec->env) {
      setenv(key.c_str(), value.c_str(), 1);
    }
  }
  std::vector<char*> c_argv;
  for (std::string& arg : argv) c_argv.push_back(arg.data());
  c_argv.push_back(nullptr);
  std::fflush(stderr);
  execvp(c_argv[0], c_argv.data());
  std::fprintf(stderr, "petrel-launch: cannot run %s: %s\n", c_argv[0],
               std::strerror(errno));
  return 1;
}

// The flags' ranges, and what needs what.
absl::Status CheckLaunchFlags() {
  if ((!FLAGS_checkpoint_dir.empty() || !FLAGS_restore_from.empty()) &&
      FLAGS_config.empty()) {
    return absl::InvalidArgumentError(
        "--checkpoint_dir and --restore_from need --config");
  }
  if (FLAGS_stop_timeout_s < 1) {
    return absl::InvalidArgumentError("--stop_timeout_s must be >= 1");
  }
  if (FLAGS_server_io_cpu < -1 || FLAGS_server_io_cpu > 1023) {
    return absl::InvalidArgumentError("--server_io_cpu must be in -1..1023");
  }
  if (FLAGS_timeout_s < 0 || FLAGS_listen_timeout_s < 1 ||
      FLAGS_drain_timeout_s < 0 || FLAGS_grace_period_s < 0) {
    return absl::InvalidArgumentError(
        "--timeout_s, --drain_timeout_s and --grace_period_s must be >= 0 "
        "and --listen_timeout_s >= 1");
  }
  return absl::OkStatus();
}

// The launcher's options: the flags, the job config and the hosts.
absl::StatusOr<petrel::Launcher::Options> LaunchOptions(
    std::vector<std::string> command) {
  petrel::Launcher::Options options = OptionsFromFlags(std::move(command));
  // With --slurm the workers are the tasks left over, unless a flag or the
  // config says how many.
  if (FLAGS_slurm && !petrel::FlagIsSet("num_workers")) options.num_workers = 0;
  if (absl::Status s = ApplyJobConfig(options); !s.ok()) return s;
  if (FLAGS_metrics) {
    options.server_args.push_back("--metrics_port=0");
    options.scheduler_args.push_back("--metrics_port=0");
    if (petrel::IsPetrelWorker(options.command[0])) {
      options.command.push_back("--metrics_port=0");
    }
  }
  if (absl::Status s = ApplyHosts(options); !s.ok()) return s;
  return options;
}

// One warning for the job instead of one per process: the nodes learn from
// the environment they inherit that it was given. Not when the user's own
// CURVE keys (PETREL_CURVE_*) secure the job.
void WarnOpenClusterOnce() {
  if (std::getenv("PETREL_CURVE_SECRET_KEY") != nullptr) return;
  std::fprintf(stderr,
               "petrel-launch: warning: the cluster is open "
               "(unauthenticated, unencrypted): anyone who can reach its "
               "ports can join and read or change its traffic; use --curve "
               "or CURVE keys (docs/security.md) on a shared network\n");
  setenv(petrel::kOpenClusterWarnedVariable, "1", 1);
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> original_args(argv + 1, argv + argc);
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
  petrel::CliOptions cli;
  cli.name = "petrel-launch";
  cli.usage = kUsage;
  cli.positional_arguments = command.empty();  // COMMAND without "--"
  if (int code = petrel::ParseCommandLine(cli, &flag_argc, &argv); code >= 0) {
    return code;
  }
  if (flag_argc > 1) command.assign(argv + 1, argv + flag_argc);
  if (absl::Status s = petrel::CheckHostResolves(FLAGS_host); !s.ok()) {
    return UsageError(absl::StrCat("--host: ", s.message()));
  }

  if (absl::Status s = CheckLaunchFlags(); !s.ok()) {
    return UsageError(std::string(s.message()));
  }
  absl::StatusOr<petrel::Launcher::Options> made =
      LaunchOptions(std::move(command));
  if (!made.ok()) return UsageError(std::string(made.status().message()));
  petrel::Launcher::Options options = *std::move(made);
  if (FLAGS_slurm) {
    if (options.command.empty() || options.command[0].empty()) {
      return UsageError("no worker command given (put it after '--')");
    }
    absl::StatusOr<std::string> resolved = petrel::ResolveCommand(
        options.command[0], options.search_path, options.bin_dir);
    if (!resolved.ok()) {
      return UsageError(std::string(resolved.status().message()));
    }
    options.command[0] = *resolved;
    return RunSlurmTask(std::move(options), original_args);
  }
  if (absl::Status s = petrel::Launcher::Validate(options); !s.ok()) {
    return UsageError(std::string(s.message()));
  }
  if (absl::StatusOr<std::string> resolved = petrel::ResolveCommand(
          options.command[0], options.search_path, options.bin_dir);
      !resolved.ok()) {
    return UsageError(std::string(resolved.status().message()));
  }
  std::unique_ptr<petrel::EphemeralClusterKeys> keys;
  if (FLAGS_curve) {
    absl::StatusOr<std::unique_ptr<petrel::EphemeralClusterKeys>> made =
        petrel::EphemeralClusterKeys::Create(options.num_servers,
                                             options.num_workers);
    if (!made.ok()) {
      std::fprintf(stderr, "petrel-launch: %s\n",
                   std::string(made.status().message()).c_str());
      return 1;
    }
    keys = *std::move(made);
    options.child_env = [k = keys.get()](const std::string& name) {
      return k->EnvFor(name);
    };
  }
  if (keys == nullptr) WarnOpenClusterOnce();
  // A closed stdout must not kill the launcher before it stops the job.
  signal(SIGPIPE, SIG_IGN);
  petrel::Launcher launcher(std::move(options));
  return launcher.Run();
}
