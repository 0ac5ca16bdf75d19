// The scheduler's flags (--heartbeat_timeout_s, --virtual_nodes, ...) and
// the built-in scheduler daemon they configure. Part of the flags module of
// the binaries that can run the scheduler (petrel-scheduler, and node
// programs started with DMLC_ROLE=scheduler): linked into executables only.
#ifndef PETREL_SCHEDULER_SCHEDULER_FLAGS_H_
#define PETREL_SCHEDULER_SCHEDULER_FLAGS_H_

#include <memory>

#include "absl/status/statusor.h"

#include "scheduler/scheduler_daemon.h"

namespace petrel {

// The options from the flags (with job/job_flags.h's --config,
// --checkpoint_dir, --restore_from); InvalidArgument naming a flag whose
// value is out of its range.
absl::StatusOr<SchedulerDaemonOptions> SchedulerDaemonOptionsFromFlags();

// NewSchedulerDaemon(SchedulerDaemonOptionsFromFlags()).
absl::StatusOr<std::unique_ptr<NodeDaemon>> SchedulerDaemonFromFlags();

}  // namespace petrel

#endif  // PETREL_SCHEDULER_SCHEDULER_FLAGS_H_
