// Stops a run that diverged before its numbers reach the servers: a
// non-finite loss, or a gradient that is not finite or so large that the
// optimizers' squared-gradient state would overflow (kMaxGradientMagnitude).
//
// Thread safety: pure function.
#ifndef PETREL_WORKER_TRAIN_DIVERGENCE_CHECK_H_
#define PETREL_WORKER_TRAIN_DIVERGENCE_CHECK_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"

#include "proto/job.pb.h"
#include "worker/model/model.h"

namespace petrel {

// OK when `loss` (the batch's summed log loss) is finite and every
// gradient of grads[t] (for tables[t]) is safe. Otherwise FailedPrecondition
// "training diverged at step S (epoch E): ..." naming the table and its
// optimizer (from `job`) and the value. `step` counts batches from 0.
absl::Status CheckDivergence(const pb::JobConfig& job,
                             const std::vector<ModelTable>& tables, double loss,
                             const std::vector<std::vector<float>>& grads,
                             int64_t step, int epoch);

}  // namespace petrel

#endif  // PETREL_WORKER_TRAIN_DIVERGENCE_CHECK_H_
