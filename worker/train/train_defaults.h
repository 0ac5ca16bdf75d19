// The defaults and checks of a job's training fields, applied before a
// trainer (or petrel-predict, which scores with the job's settings) uses
// them.
//
// Thread-safe (pure functions).
#ifndef PETREL_WORKER_TRAIN_TRAIN_DEFAULTS_H_
#define PETREL_WORKER_TRAIN_TRAIN_DEFAULTS_H_

#include "absl/status/status.h"

#include "proto/job.pb.h"

namespace petrel {

// Applies the documented defaults of job.proto's training fields
// (batch_size, epochs, progress interval, fm_dim, device, early-stopping
// patience) and checks the values the trainer uses (validation files
// included); InvalidArgument names the field.
absl::Status ResolveTrainDefaults(pb::JobConfig* job);

}  // namespace petrel

#endif  // PETREL_WORKER_TRAIN_TRAIN_DEFAULTS_H_
