// petrel-scheduler: admits the nodes of a job, runs its barriers, watches
// heartbeats and connections (a node whose process died is declared dead
// within --connection_grace_ms) and ends the job when every worker has
// finished. With the job
// config (--config) it also coordinates checkpoints (checkpoint.*,
// --checkpoint_dir) and graceful stops:
//
//   petrel-scheduler --port=9000 --num_servers=2 --num_workers=4
//   petrel-scheduler --port=9000 --config=job.textproto
//
// A training worker that dies does not fail the job (unless
// --survive_worker_failures=false): its data goes to the live workers.
// SIGUSR1 (or `petrelctl checkpoint`) takes a checkpoint now;
// SIGTERM/SIGINT (or `petrelctl stop`) checkpoints (with a checkpoint
// directory), stops the workers and ends the job; a second signal ends the
// scheduler at once.
//
// Exit codes: 0 the job finished, 1 it failed or was stopped (a node died,
// the cluster did not form, a signal), 2 bad flags or configuration.
#include "node/daemon_main.h"
#include "scheduler/scheduler_flags.h"

int main(int argc, char** argv) {
  petrel::DaemonInfo info;
  info.name = "petrel-scheduler";
  info.role = petrel::pb::ROLE_SCHEDULER;
  info.usage =
      "runs the scheduler of a Petrel job.\n"
      "  petrel-scheduler --port=9000 --num_servers=S --num_workers=W";
  info.make_daemon = &petrel::SchedulerDaemonFromFlags;
  return petrel::RunNodeDaemon(argc, argv, info);
}
