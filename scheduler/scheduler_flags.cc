#include "scheduler/scheduler_flags.h"

#include "gflags/gflags.h"

#include "base/flag_check.h"
#include "base/status_macros.h"
#include "job/job_flags.h"

DEFINE_int32(heartbeat_timeout_s, 30,
             "Declare a node dead after this many seconds without a "
             "heartbeat (0..86400); 0 disables. Default 30.");
DEFINE_int32(connection_grace_ms, 300,
             "Declare a node dead when the scheduler's connection to it "
             "closed (its process died) and did not come back within this "
             "many milliseconds (0..60000); 0 disables, leaving heartbeats "
             "only. Default 300.");
DEFINE_bool(recover, false,
            "Take over a running job whose scheduler died: start with the "
            "dead scheduler's --port (and address, and CURVE key), "
            "--num_servers and --num_workers; every node rejoins with its id "
            "within --join_timeout_s and the job goes on (docs/failures.md). "
            "Default false.");
DEFINE_int32(virtual_nodes, 32, "Key ranges per server (1..4096). Default 32.");
DEFINE_int32(replicas, 0,
             "Copies of each key range on distinct servers (0..servers): "
             "with 2 or more a server's death fails over to a replica "
             "instead of failing the job; 1 keeps one copy and a server's "
             "death fails the job (docs/failures.md). Default 0: the job "
             "config's replicas, else 2 when there are at least 2 servers.");
DEFINE_bool(
    fail_on_dead_node, true,
    "End the job as failed when a node is declared dead. Default true.");
DEFINE_bool(survive_worker_failures, true,
            "A training worker that dies does not fail the job: its data "
            "goes to the live workers (docs/design.md, \"Worker "
            "failures\"). Default true.");
DEFINE_string(progress_csv, "",
              "Where to write the job's progress and evaluations as CSV "
              "(docs/training.md); overrides train.progress_csv. Default "
              "empty: the config's, else no CSV.");
DEFINE_int32(checkpoint_timeout_s, 600,
             "Longest wait for the workers to pause and the servers to save "
             "a checkpoint (1..86400). Default 600.");

namespace petrel {

absl::StatusOr<SchedulerDaemonOptions> SchedulerDaemonOptionsFromFlags() {
  PETREL_RETURN_IF_ERROR(CheckFlagRange("heartbeat_timeout_s",
                                        FLAGS_heartbeat_timeout_s, 0, 86400));
  PETREL_RETURN_IF_ERROR(CheckFlagRange("connection_grace_ms",
                                        FLAGS_connection_grace_ms, 0, 60000));
  PETREL_RETURN_IF_ERROR(
      CheckFlagRange("virtual_nodes", FLAGS_virtual_nodes, 1, 4096));
  PETREL_RETURN_IF_ERROR(CheckFlagRange("checkpoint_timeout_s",
                                        FLAGS_checkpoint_timeout_s, 1, 86400));
  PETREL_RETURN_IF_ERROR(CheckFlagRange("replicas", FLAGS_replicas, 0, 4096));
  SchedulerDaemonOptions o;
  o.config_path = FLAGS_config;
  o.checkpoint_dir = FLAGS_checkpoint_dir;
  o.restore_from = FLAGS_restore_from;
  o.progress_csv = FLAGS_progress_csv;
  o.heartbeat_timeout = absl::Seconds(FLAGS_heartbeat_timeout_s);
  o.connection_grace = absl::Milliseconds(FLAGS_connection_grace_ms);
  o.virtual_nodes = FLAGS_virtual_nodes;
  o.fail_on_dead_node = FLAGS_fail_on_dead_node;
  o.replicas = FLAGS_replicas;
  o.replicas_set = FlagIsSet("replicas");
  o.recover = FLAGS_recover;
  o.survive_worker_failures = FLAGS_survive_worker_failures;
  o.checkpoint_timeout = absl::Seconds(FLAGS_checkpoint_timeout_s);
  return o;
}

absl::StatusOr<std::unique_ptr<NodeDaemon>> SchedulerDaemonFromFlags() {
  PETREL_ASSIGN_OR_RETURN(SchedulerDaemonOptions o,
                          SchedulerDaemonOptionsFromFlags());
  return NewSchedulerDaemon(o);
}

}  // namespace petrel
