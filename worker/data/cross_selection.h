// Selection of the field pairs to cross (model.crosses.auto_max_pairs,
// job/crosses_config.h) by held-out gain, AutoCross-style, before training.
//
// Each worker reads the same first auto_sample_rows examples of the
// training files (the whole files, in order, as one reader of rank 0 of 1
// reads them; without the examples data.validation_fraction holds out) and
// runs the same deterministic computation on them, so every worker picks
// the same pairs without exchanging anything. On that sample:
// With fewer than 10000 rows (min_rows) it selects nothing (logged).
//  1. rows split in two halves by a hash of the row's index (fit / eval);
//  2. a base LR over the fields' values is fit on the fit half by `sweeps`
//     rounds of one L2-regularised Newton step per field value, field after
//     field (backfitting: w_v += (sum(y - p) - l2 w_v) / (sum p(1-p) + l2));
//  3. for every pair of fields (a, b), each cross value (a hash of both
//     values into 2^table_bits buckets) gets one shrunk Newton step of the
//     base's residual on the fit half, sum(y - p) / (sum p(1-p) + l2), and
//     the pair scores the drop of the eval half's mean logloss this gives,
//     relative to the base's eval logloss;
//  4. pairs scoring at least min_gain whose drop is also above the
//     sample's noise (its mean over eval rows at least min_z = 3 standard
//     errors: with 741 pairs tested, fewer than one noise pair is expected
//     to pass even if noise pairs' drops were centred on 0; at z >= 2, on
//     20k rows of per-pair data three noise pairs passed (z 2.0-2.3) and
//     cost the MLP 1.2% test logloss) are kept, best first (ties: the lower
//     pair), at most max_pairs. The relative threshold does most of the
//     work on large samples; the z-score and min_rows guard small ones.
// Memory: the sample's value ids (4 bytes per row and field), per-field
// weights (4 bytes x 2^table_bits x fields, freed before step 3) and one
// array of 2^table_bits (g, h) double pairs: about 80 MiB at 200000 rows
// and 39 fields (the defaults), whatever the data's cardinality. Time:
// 7-21 s at the defaults on a shared 2-core machine, up to ~1 min at load
// average 30 (logged).
//
// Thread-safe (no shared state).
#ifndef PETREL_WORKER_DATA_CROSS_SELECTION_H_
#define PETREL_WORKER_DATA_CROSS_SELECTION_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"

#include "job/crosses_config.h"
#include "proto/job.pb.h"
#include "worker/data/batch.h"

namespace petrel {

// Rows x fields of value ids (column-major), 0/1 labels.
class CrossSample {
 public:
  static constexpr uint32_t kMissing = 0xffffffffu;

  explicit CrossSample(int num_fields) : num_fields_(num_fields) {}

  // Appends one row: ids[f] is field f's value id or kMissing.
  void AddRow(const std::vector<uint32_t>& ids, float label);
  // Appends the batch's examples (which must carry fields), each field's
  // first key's id (IdOfKey); fields >= num_fields are ignored. Stops at
  // max_rows rows in all.
  void AddBatch(const Batch& batch, size_t max_rows);
  // The id of a feature key (its upper 32 bits; never kMissing).
  static uint32_t IdOfKey(uint64_t key);

  int num_fields() const { return num_fields_; }
  size_t rows() const { return labels_.size(); }
  uint32_t id(size_t row, int field) const { return columns_[field][row]; }
  float label(size_t row) const { return labels_[row]; }

 private:
  int num_fields_;
  std::vector<std::vector<uint32_t>> columns_{static_cast<size_t>(num_fields_)};
  std::vector<float> labels_;
};

struct CrossSelectionOptions {
  int max_pairs = 16;
  double min_gain = 3e-4;  // relative drop of the eval logloss
  double min_z = 3;        // and its z-score (sample noise)
  int min_rows = 10000;    // fewer rows: no pair (too noisy)
  // Asked before each field's sweep and each pair; true ends the selection
  // early with CrossSelection::stopped. Default null: never.
  std::function<bool()> stopped;
  double l2 = 10;
  int sweeps = 3;
  int table_bits = 18;
};

struct ScoredPair {
  CrossPair pair;
  double gain = 0;  // relative drop of the eval half's logloss
  double z = 0;     // the drop's mean over eval rows / its standard error
};

struct CrossSelection {
  std::vector<ScoredPair> chosen;      // best first
  std::vector<ScoredPair> runners_up;  // the best few not chosen, for logs
  double base_logloss = 0;             // the base LR's on the eval half
  size_t rows = 0;
  bool stopped = false;  // options.stopped said so: nothing chosen
};

// Steps 1..4 above on `sample`.
CrossSelection SelectCrossPairs(const CrossSample& sample,
                                const CrossSelectionOptions& options);

// When `job` selects its crosses (SelectsCrosses) on Criteo data: reads
// the sample, selects, writes the chosen pairs into job->model.crosses
// .pairs and logs them with their gains, the runners-up and the time taken.
// On other formats logs that crosses do not apply. Errors: the training
// files' (reading), InvalidArgument when they hold no examples, Aborted
// when `stopped` (asked between batches and pairs; may be null) says so.
absl::StatusOr<CrossSelection> SelectCrossesForJob(
    pb::JobConfig* job, std::function<bool()> stopped = nullptr);

}  // namespace petrel

#endif  // PETREL_WORKER_DATA_CROSS_SELECTION_H_
