// Turning a job config (proto/job.proto) into the tables a server holds:
// defaults filled in as job.proto documents them, every value validated.
//
// Defaults when `tables` is empty (what the model needs):
//   LR  table 0: sparse, dim 1, zeros, FTRL
//   FM  table 0: sparse, dim 1, zeros, FTRL (linear weights) and
//       table 1: sparse, dim fm_dim, normal(0, 0.01) with seed 0, FTRL
//       (factors: zeros would never move, their gradients would stay 0)
//   MLP table 1: sparse, dim embedding_dim, normal(0, 0.01), Adagrad
//       (embeddings); table 2: dense, dim 64, the MLP's weights
//       (job/model_layout.h), normal(0, 0.05), Adam; with `wide` also
//       table 0 as for LR
// Optimizer fields at 0 take their documented defaults (learning_rate per
// kind: SGD 0.01, Adagrad 0.05, Adam 0.001; epsilon 1e-8; beta1 0.9; beta2
// 0.999; ftrl_alpha 0.05; ftrl_beta 0.001, on the scale of the batch-mean
// gradient; l1, l2 and weight_decay 0); weight bounds apply
// when weight_min < weight_max.
//
// Thread safety: free functions without shared state.
#ifndef PETREL_SERVER_TABLE_CONFIG_H_
#define PETREL_SERVER_TABLE_CONFIG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

#include "job/job_tables.h"
#include "job/model_layout.h"
#include "proto/job.pb.h"
#include "server/initializer.h"
#include "server/optimizer.h"
#include "server/table.h"

namespace petrel {

// Validated TableOptions (id, dim, dense, num_keys, initializer, optimizer)
// for every table of the job; the sharding fields keep their defaults.
// InvalidArgument names the field ("tables[1].optimizer.beta1: ...") for a
// value out of range, a duplicate table id, or tables that do not fit the
// model (LR needs table 0 of dim 1; FM also table 1 of dim fm_dim; MLP
// table 1 of dim embedding_dim and table 2 dense with the layout's rows).
absl::StatusOr<std::vector<TableOptions>> TableOptionsFromJob(
    const pb::JobConfig& job);

// The bounded delay tau of the job: consistency.max_delay, where -1 means
// infinity (returned as -1). InvalidArgument below -1.
absl::StatusOr<int64_t> MaxDelayFromJob(const pb::JobConfig& job);

// Conversions of one proto, validated; `field` prefixes error messages.
absl::StatusOr<OptimizerConfig> OptimizerFromProto(
    const pb::OptimizerProto& proto, absl::string_view field);
absl::StatusOr<InitializerConfig> InitializerFromProto(
    const pb::InitializerConfig& proto, absl::string_view field);

}  // namespace petrel

#endif  // PETREL_SERVER_TABLE_CONFIG_H_
