// The built-in scheduler as a NodeDaemon (node/node_daemon.h): admits the
// nodes of a job, runs its barriers, watches heartbeats and connections,
// coordinates checkpoints and graceful stops (with a job config) and ends
// the job when every worker has finished. petrel-scheduler runs it, and so
// does any node program started with DMLC_ROLE=scheduler
// (roles/built_in_roles.h).
//
// Thread safety: as NodeDaemon.
#ifndef PETREL_SCHEDULER_SCHEDULER_DAEMON_H_
#define PETREL_SCHEDULER_SCHEDULER_DAEMON_H_

#include <memory>
#include <string>

#include "absl/time/time.h"

#include "node/node_daemon.h"

namespace petrel {

struct SchedulerDaemonOptions {
  // The job config file (protobuf text format); empty: no checkpoints, no
  // graceful stop. Default empty.
  std::string config_path;
  // Override checkpoint.dir / checkpoint.restore_from; need config_path.
  // Default empty.
  std::string checkpoint_dir;
  std::string restore_from;
  // Where to write the job's progress and evaluations as CSV
  // (docs/training.md); overrides train.progress_csv. Default empty: the
  // config's, else no CSV.
  std::string progress_csv;
  // A node silent this long is dead; zero disables. Default 30 s.
  absl::Duration heartbeat_timeout = absl::Seconds(30);
  // A node whose connection closed and stayed closed this long is dead;
  // zero disables. Default 300 ms.
  absl::Duration connection_grace = absl::Milliseconds(300);
  // Key ranges per server (1..4096). Default 32.
  int virtual_nodes = 32;
  // SchedulerOptions::replicas. Default 0: the job config's replicas, else
  // 2 when there are at least 2 servers.
  int replicas = 0;
  // Whether --replicas was given: it then overrides the config's replicas.
  bool replicas_set = false;
  // A dead node ends the job as failed. Default true.
  bool fail_on_dead_node = true;
  // Take over a running job whose scheduler died (SchedulerOptions::
  // recover); needs the dead scheduler's port. Default false.
  bool recover = false;
  // A training worker that dies does not fail the job. Default true.
  bool survive_worker_failures = true;
  // Longest wait for a checkpoint. Default 600 s.
  absl::Duration checkpoint_timeout = absl::Seconds(600);
};

std::unique_ptr<NodeDaemon> NewSchedulerDaemon(
    const SchedulerDaemonOptions& options);

}  // namespace petrel

#endif  // PETREL_SCHEDULER_SCHEDULER_DAEMON_H_
