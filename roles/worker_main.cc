// petrel-worker: the host for Petrel's built-in worker jobs. It joins the
// cluster as a worker, runs one job and reports it on stdout.
//
//   petrel-worker --scheduler=HOST:PORT [--job=check] [--rounds=10]
//       [--num_keys=1000] [--inflight=4] [--timeout_s=60]
//
// Jobs (worker/train/worker_daemon.h):
//   check  Pushes (rank + 1) to keys 0..num_keys-1 for --rounds rounds, meets
//          the other workers at a barrier, pulls every key and checks the
//          exact sum rounds * W * (W + 1) / 2 (see worker/train/check_job.h).
//          Prints "check rank=R keys=N rounds=K ok=true".
//   train  Trains the model of a job config (--config=FILE; --train,
//          --test, --epochs, --batch_size override it) on this worker's share
//          of the training files; worker 0 evaluates on the test files and
//          prints "final test_logloss=... test_auc=... examples_per_s=...".
//          Takes part in checkpoints (job/checkpoint_protocol.h) and in
//          recovery from worker failures (job/recovery_protocol.h);
//          --restore_from continues from a checkpoint's worker position.
//
// Started with DMLC_ROLE=scheduler or DMLC_ROLE=server, as PS-Lite's
// launchers start one program in every role, it runs the built-in scheduler
// or server instead (roles/built_in_roles.h), with the same flags as
// petrel-scheduler and petrel-server. That is why its main is here, above
// the role folders.
//
// SIGTERM/SIGINT during training asks the scheduler to stop the job (after
// a checkpoint when the job has a checkpoint directory); a second signal
// ends the worker at once.
//
// Exit codes: 0 the job passed and the cluster ended cleanly; 1 a runtime
// failure (a wrong sum, a deadline, a failed job, SIGTERM/SIGINT: one line
// on stderr says which); 2 bad flags or configuration.
#include "node/daemon_main.h"
#include "roles/built_in_roles.h"
#include "worker/train/worker_flags.h"

int main(int argc, char** argv) {
  petrel::DaemonInfo info;
  info.name = "petrel-worker";
  info.role = petrel::pb::ROLE_WORKER;
  info.usage =
      "runs a built-in Petrel worker job.\n"
      "  petrel-worker --scheduler=HOST:PORT [--job=check] [--rounds=10] "
      "[--num_keys=1000]";
  info.make_daemon = &petrel::WorkerDaemonFromFlags;
  // Started with DMLC_ROLE=scheduler or server (PS-Lite's launchers), it
  // runs the built-in scheduler or server.
  info.other_role = &petrel::BuiltInDaemonFromFlags;
  return petrel::RunNodeDaemon(argc, argv, info);
}
