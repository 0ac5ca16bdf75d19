#include "tools/launch/slurm_launch.h"

#include <algorithm>
#include <cerrno>
#include <initializer_list>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

#include "tools/launch/slurm_nodelist.h"

namespace petrel {
namespace {

// The first of `names` that is set, or nullptr.
const char* FirstSet(const std::function<const char*(const char*)>& get_env,
                     std::initializer_list<const char*> names,
                     const char** which) {
  for (const char* name : names) {
    const char* value = get_env(name);
    if (value != nullptr && *value != '\0') {
      *which = name;
      return value;
    }
  }
  *which = *names.begin();
  return nullptr;
}

absl::Status ParseCount(const char* name, const char* text, int64_t min,
                        int64_t* out) {
  if (!absl::SimpleAtoi(text, out) || *out < min || *out > (int64_t{1} << 40)) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, "=", text, " is not a number >= ", min));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<SlurmTask> SlurmTaskFromEnv(
    const std::function<const char*(const char*)>& get_env) {
  SlurmTask task;
  const char* name = nullptr;
  const char* job_id =
      FirstSet(get_env, {"SLURM_JOB_ID", "SLURM_JOBID"}, &name);
  if (job_id == nullptr) {
    return absl::FailedPreconditionError(
        "--slurm: SLURM_JOB_ID is not set; run inside a Slurm allocation "
        "(sbatch or salloc)");
  }
  if (absl::Status s = ParseCount(name, job_id, 0, &task.job_id); !s.ok()) {
    return s;
  }
  const char* ntasks =
      FirstSet(get_env, {"SLURM_NTASKS", "SLURM_NPROCS"}, &name);
  if (ntasks == nullptr) {
    return absl::FailedPreconditionError(
        "--slurm: SLURM_NTASKS is not set; give the allocation a task count "
        "(sbatch --ntasks=N, one task per Petrel process)");
  }
  int64_t n = 0;
  if (absl::Status s = ParseCount(name, ntasks, 1, &n); !s.ok()) return s;
  task.num_tasks = static_cast<int>(std::min<int64_t>(n, 1 << 30));
  task.in_step =
      FirstSet(get_env, {"SLURM_STEP_ID", "SLURM_STEPID"}, &name) != nullptr;
  if (task.in_step) {
    const char* proc_id = FirstSet(get_env, {"SLURM_PROCID"}, &name);
    if (proc_id == nullptr) {
      return absl::FailedPreconditionError(
          "--slurm: SLURM_PROCID is not set in this srun step");
    }
    int64_t id = 0;
    if (absl::Status s = ParseCount(name, proc_id, 0, &id); !s.ok()) return s;
    if (id >= task.num_tasks) {
      return absl::InvalidArgumentError(absl::StrCat(
          "SLURM_PROCID=", id, " is not below SLURM_NTASKS=", task.num_tasks));
    }
    task.proc_id = static_cast<int>(id);
  }
  const char* list = FirstSet(
      get_env,
      task.in_step ? std::initializer_list<const char*>{"SLURM_STEP_NODELIST",
                                                        "SLURM_JOB_NODELIST",
                                                        "SLURM_NODELIST"}
                   : std::initializer_list<const char*>{"SLURM_JOB_NODELIST",
                                                        "SLURM_NODELIST"},
      &name);
  if (list == nullptr) {
    return absl::FailedPreconditionError(
        "--slurm: SLURM_JOB_NODELIST is not set");
  }
  absl::StatusOr<std::vector<std::string>> hosts = ExpandSlurmNodeList(list);
  if (!hosts.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": ", hosts.status().message()));
  }
  task.hosts = *std::move(hosts);
  if (const char* node = get_env("SLURMD_NODENAME"); node != nullptr) {
    task.node_name = node;
  }
  return task;
}

absl::StatusOr<int> FreeTcpPort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::ErrnoToStatus(errno, "socket");
  sockaddr_in address = {};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  address.sin_port = 0;
  socklen_t length = sizeof(address);
  absl::Status status;
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    status = absl::ErrnoToStatus(errno, "bind");
  } else if (getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) !=
             0) {
    status = absl::ErrnoToStatus(errno, "getsockname");
  }
  close(fd);
  if (!status.ok()) return status;
  return static_cast<int>(ntohs(address.sin_port));
}

int SlurmSchedulerPort(const SlurmTask& task, int port) {
  if (port != 0) return port;
  return 20000 + static_cast<int>(task.job_id % 20000);
}

absl::StatusOr<ExecSpec> SlurmTaskSpec(const SlurmTask& task,
                                       const Launcher::Options& options,
                                       int scheduler_port) {
  const int servers = options.num_servers;
  const int workers = options.num_workers > 0 ? options.num_workers
                                              : task.num_tasks - 1 - servers;
  if (servers < 1 || workers < 1 || 1 + servers + workers != task.num_tasks) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--slurm: the step has ", task.num_tasks,
        " tasks but the job needs 1 scheduler + ", servers, " servers + ",
        options.num_workers > 0 ? absl::StrCat(workers) : "at least 1",
        " workers; run it with --ntasks=", 1 + servers + std::max(workers, 1)));
  }
  const std::string& host = task.hosts.front();
  const std::string scheduler = absl::StrCat(host, ":", scheduler_port);
  const std::string counts[] = {absl::StrCat("--num_servers=", servers),
                                absl::StrCat("--num_workers=", workers)};
  ExecSpec spec;
  if (task.proc_id == 0) {
    spec.role = "scheduler";
    spec.argv = {options.bin_dir + "/petrel-scheduler",
                 absl::StrCat("--port=", scheduler_port), counts[0], counts[1],
                 "--advertise_host=" + host};
    spec.argv.insert(spec.argv.end(), options.scheduler_args.begin(),
                     options.scheduler_args.end());
  } else if (task.proc_id <= servers) {
    const int rank = task.proc_id - 1;
    spec.role = absl::StrCat("server ", rank);
    spec.argv = {options.bin_dir + "/petrel-server",
                 "--scheduler=" + scheduler,
                 "--port=0",
                 absl::StrCat("--rank=", rank),
                 counts[0],
                 counts[1]};
    spec.argv.insert(spec.argv.end(), options.server_args.begin(),
                     options.server_args.end());
  } else {
    const int rank = task.proc_id - 1 - servers;
    spec.role = absl::StrCat("worker ", rank);
    spec.argv = options.command;
    spec.env = {{"DMLC_ROLE", "worker"},
                {"DMLC_PS_ROOT_URI", host},
                {"DMLC_PS_ROOT_PORT", absl::StrCat(scheduler_port)},
                {"DMLC_NUM_SERVER", absl::StrCat(servers)},
                {"DMLC_NUM_WORKER", absl::StrCat(workers)},
                {"PETREL_RANK", absl::StrCat(rank)},
                {"PETREL_SCHEDULER", scheduler}};
  }
  return spec;
}

std::vector<std::string> SrunArgv(const std::string& self, int scheduler_port,
                                  const std::vector<std::string>& args) {
  std::vector<std::string> argv = {
      "srun", "--kill-on-bad-exit=1", "--label", self,
      absl::StrCat("--scheduler_port=", scheduler_port)};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

}  // namespace petrel
