// The worker's flags (--job, --train, --rounds, ...) and the built-in worker
// daemon they configure. Part of the flags module of petrel-worker: linked
// into executables only.
#ifndef PETREL_WORKER_TRAIN_WORKER_FLAGS_H_
#define PETREL_WORKER_TRAIN_WORKER_FLAGS_H_

#include <memory>

#include "absl/status/statusor.h"

#include "worker/train/worker_daemon.h"

namespace petrel {

// The options from the flags (with job/job_flags.h's --config,
// --checkpoint_dir, --restore_from). The ranges are checked by the daemon's
// CheckFlags, with the flags' names.
WorkerDaemonOptions WorkerDaemonOptionsFromFlags();

// NewWorkerDaemon(WorkerDaemonOptionsFromFlags()).
absl::StatusOr<std::unique_ptr<NodeDaemon>> WorkerDaemonFromFlags();

}  // namespace petrel

#endif  // PETREL_WORKER_TRAIN_WORKER_FLAGS_H_
