// Slurm mode of petrel-launch (`petrel-launch --slurm`): inside an
// allocation, every task of an `srun` step runs petrel-launch, which turns
// itself into one process of the job, chosen by the task's SLURM_PROCID:
// task 0 is the scheduler (on the step's first host), tasks 1..S the
// servers, the rest the workers. Run outside a step (in the batch script or
// an salloc shell) petrel-launch first re-runs itself under srun.
//
// Thread-safe (pure functions).
#ifndef PETREL_TOOLS_LAUNCH_SLURM_LAUNCH_H_
#define PETREL_TOOLS_LAUNCH_SLURM_LAUNCH_H_

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

#include "tools/launch/launcher.h"

namespace petrel {

// What Slurm's environment says about this task.
struct SlurmTask {
  // True inside an srun step (SLURM_STEP_ID or SLURM_STEPID is set); false
  // in the batch script or an salloc shell.
  bool in_step = false;
  int proc_id = 0;     // SLURM_PROCID; 0 <= proc_id < num_tasks in a step
  int num_tasks = 0;   // SLURM_NTASKS (or SLURM_NPROCS)
  int64_t job_id = 0;  // SLURM_JOB_ID
  // SLURM_STEP_NODELIST (in a step), else SLURM_JOB_NODELIST, expanded;
  // task 0 runs on the first.
  std::vector<std::string> hosts;
  // SLURMD_NODENAME: the node this runs on; empty outside the allocation's
  // nodes (an salloc shell on a login node).
  std::string node_name;
};

// Reads the task from `get_env` (std::getenv in petrel-launch).
// FailedPrecondition when SLURM_JOB_ID or SLURM_NTASKS is missing (not in
// an allocation, or sbatch without --ntasks); InvalidArgument naming the
// variable for a malformed value.
absl::StatusOr<SlurmTask> SlurmTaskFromEnv(
    const std::function<const char*(const char*)>& get_env);

// The scheduler's port: `port` when it is not 0, else one derived from the
// job id (20000 + job_id % 20000), the same in every task of the job.
// (Run in the batch script on the first host, petrel-launch picks a free
// port there with FreeTcpPort() and passes it to the tasks instead.)
int SlurmSchedulerPort(const SlurmTask& task, int port);

// A TCP port that is free on this host now (bound to port 0 and closed).
// Another process may take it before it is used; a scheduler that cannot
// bind it fails with a clear error. Errors from socket(2) and bind(2).
absl::StatusOr<int> FreeTcpPort();

// What one task runs.
struct ExecSpec {
  std::string role;  // "scheduler", "server 1", "worker 0"
  std::vector<std::string> argv;
  std::vector<std::pair<std::string, std::string>> env;  // set or replaced
};

// The process of task `task.proc_id` for a job described by `options`
// (num_servers, command, bin_dir, scheduler_args, server_args;
// num_workers 0 means every task left after the scheduler and servers).
// InvalidArgument naming both numbers when the step's tasks do not match
// 1 + servers + workers, or leave no worker.
// REQUIRES: task.in_step.
absl::StatusOr<ExecSpec> SlurmTaskSpec(const SlurmTask& task,
                                       const Launcher::Options& options,
                                       int scheduler_port);

// The command that runs petrel-launch (`self`, with its arguments `args`,
// which may end in "-- COMMAND...") once per task of the allocation, with
// --scheduler_port=`scheduler_port` before them: srun, killing the step
// when a task fails, with each output line labelled by its task number.
std::vector<std::string> SrunArgv(const std::string& self, int scheduler_port,
                                  const std::vector<std::string>& args);

}  // namespace petrel

#endif  // PETREL_TOOLS_LAUNCH_SLURM_LAUNCH_H_
