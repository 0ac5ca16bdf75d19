// Checks of a job config as a whole, run by every daemon and the launcher
// before anything starts (per-field checks live with the code that uses
// each field), and the bound on values that the optimizers can take.
//
// Thread safety: pure functions.
#ifndef PETREL_JOB_JOB_CHECK_H_
#define PETREL_JOB_JOB_CHECK_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/types/span.h"

#include "proto/job.pb.h"

namespace petrel {

// The largest gradient magnitude a push may carry: about sqrt(FLT_MAX), so
// that its square, which Adagrad, Adam and FTRL accumulate in float, stays
// finite. A gradient above it is a diverged run, not data to learn from.
inline constexpr float kMaxGradientMagnitude = 1.8e19f;

// The index of the first value that is NaN, infinite or above `limit` in
// magnitude; -1 when there is none.
int64_t FindUnsafeValue(absl::Span<const float> values, float limit);

// "FTRL", "SGD", "Adagrad", "Adam".
std::string OptimizerName(pb::OptimizerProto::Kind kind);

// "table 0 (optimizer FTRL)" for table `id` of the job (JobTables);
// "table N" for a table the job does not have.
std::string DescribeTable(const pb::JobConfig& job, int id);

// Bytes of physical memory of this machine (0 when unknown).
int64_t PhysicalMemoryBytes();

// Estimated bytes of one server for the job's tables and of one worker for
// the MLP's dense weights (weights and gradients, and one batch's layer
// outputs and their gradients). A server holds its dense tables' rows and
// optimizer state (split across num_servers), each capped sparse table's
// memory_cap_mib and the admission sketch of each uncapped one; with
// server.memory_cap_mib, at most that cap (but never less than the dense
// tables, which are never evicted). An uncapped sparse table grows with
// the data and is not estimated (unless the server's cap bounds it).
int64_t EstimateServerBytes(const pb::JobConfig& job);
int64_t EstimateWorkerBytes(const pb::JobConfig& job);

// InvalidArgument naming the field: num_servers or num_workers negative,
// memory_limit_mib negative, server.memory_cap_mib not in 0..10^12 or below
// the dense tables' estimate, data.max_abs_value negative or not finite, an
// invalid MLP layout, validation or early stopping that cannot work
// (CheckValidationConfig), or a process whose estimate exceeds the limit
// (memory_limit_mib, or `physical_bytes` when that is 0; no check when both
// are 0), with the estimate and the limit, naming server.memory_cap_mib
// when the server's cap is what may pass the limit, else
// tables[i].memory_cap_mib of the largest capped table when the caps hold
// more than the dense tables, else the dense tables (model.hidden or
// tables). `num_servers` > 0 is the
// cluster's actual number of servers (flags may override the job's).
absl::Status CheckJobConfig(const pb::JobConfig& job, int num_servers,
                            int64_t physical_bytes);

// InvalidArgument naming the field: data.validation_fraction outside
// [0, 1), both data.validation and validation_fraction set, or
// train.early_stopping with a patience below 0, a min_delta negative or
// not finite, or a metric but no validation data. (Patience 0 is the
// default, 3.) CheckJobConfig runs it.
absl::Status CheckValidationConfig(const pb::JobConfig& job);

// For a job whose processes all run on this machine (petrel-launch): the
// estimates of `num_servers` servers and `num_workers` workers together
// must fit `physical_bytes` (no check when 0). InvalidArgument naming the
// field, the total and the memory.
absl::Status CheckOneMachineMemory(const pb::JobConfig& job, int num_servers,
                                   int num_workers, int64_t physical_bytes);

}  // namespace petrel

#endif  // PETREL_JOB_JOB_CHECK_H_
