// model.crosses (proto/job.proto, CrossesConfig): the field pairs crossed
// into extra features, their defaults and the check of the config.
//
// Thread-safe (pure functions).
#ifndef PETREL_JOB_CROSSES_CONFIG_H_
#define PETREL_JOB_CROSSES_CONFIG_H_

#include <vector>

#include "absl/status/status.h"

#include "proto/job.pb.h"

namespace petrel {

// Most pairs a job may cross (listed or selected).
inline constexpr int kMaxCrossPairs = 64;

struct CrossPair {
  int a = 0;  // field numbers (job/criteo.h), a != b
  int b = 0;
  bool operator==(const CrossPair& o) const { return a == o.a && b == o.b; }
};

// The listed pairs, in order (empty before a selection fills them).
std::vector<CrossPair> CrossPairs(const pb::ModelConfig& model);

// Cross fields: max(auto_max_pairs, pairs).
int CrossSlots(const pb::ModelConfig& model);
// Those the MLP's layout gives embeddings: CrossSlots with `embed`, else 0.
int EmbeddedCrossSlots(const pb::ModelConfig& model);

// Whether the worker selects the pairs (auto_max_pairs > 0, none listed).
bool SelectsCrosses(const pb::ModelConfig& model);

// The auto_* settings with their defaults applied.
int CrossSampleRows(const pb::CrossesConfig& c);  // default 200000
double CrossMinGain(const pb::CrossesConfig& c);  // default 3e-4
double CrossL2(const pb::CrossesConfig& c);       // default 10

// InvalidArgument naming the field: pairs listed on a format other than
// Criteo (auto_max_pairs there only logs that it does not apply);
// a pair's field outside 0..38 or a == b, a pair listed twice; more than
// kMaxCrossPairs pairs; auto_max_pairs outside 0..kMaxCrossPairs or below
// the number of listed pairs when both are set; auto_sample_rows < 0 or
// above 10^7; auto_min_gain or auto_l2 negative or not finite.
absl::Status CheckCrossesConfig(const pb::JobConfig& job);

}  // namespace petrel

#endif  // PETREL_JOB_CROSSES_CONFIG_H_
