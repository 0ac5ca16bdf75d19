// The tables a job uses, derived from the job config alone so that servers
// (which create them) and workers (which name them in errors) agree.
//
// Defaults when `tables` is empty (what the model needs):
//   LR  table 0: sparse, dim 1, zeros, FTRL
//   FM  table 0: sparse, dim 1, zeros, FTRL (linear weights) and
//       table 1: sparse, dim fm_dim, normal(0, 0.01) with seed 0, FTRL
//   MLP table 1: sparse, dim embedding_dim, normal(0, 0.01), Adagrad
//       (embeddings); table 2: dense, dim 64, the MLP's weights
//       (job/model_layout.h), normal(0, 0.05), Adam; with `wide` also
//       table 0 as for LR
// server/table_config.h validates them.
//
// Thread safety: pure functions.
#ifndef PETREL_JOB_JOB_TABLES_H_
#define PETREL_JOB_JOB_TABLES_H_

#include <vector>

#include "job/model_layout.h"
#include "proto/job.pb.h"

namespace petrel {

// The FM factor dimension with its default (8).
int FmDim(const pb::ModelConfig& model);

// The tables a job uses: job.tables, or the model's defaults above when it
// is empty.
std::vector<pb::TableProto> JobTables(const pb::JobConfig& job);

}  // namespace petrel

#endif  // PETREL_JOB_JOB_TABLES_H_
