// What a job's model needs from the servers, derived from the job config
// alone so that servers (default tables) and workers (the model) agree:
// the table ids, and for the embedding + MLP model the layout of its dense
// weights in table kMlpTable.
//
// MLP input: for each field f the pooled embeddings [embedding_dim], fields
// in order, then the numeric features. Criteo data has kCriteoFields
// fields and kCriteoNumeric numeric features (job/criteo.h); libsvm data
// has one field and none.
//
// The dense weights are one flat vector: per layer (hidden layers in order,
// then the output layer of width 1) W [in x out] row-major followed by
// b [out]; the vector is padded with zeros to whole rows of kMlpRowFloats.
//
// Thread safety: pure functions.
#ifndef PETREL_JOB_MODEL_LAYOUT_H_
#define PETREL_JOB_MODEL_LAYOUT_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"

#include "job/criteo.h"
#include "proto/job.pb.h"

namespace petrel {

inline constexpr int kLinearTable = 0;     // LR weights (+ bias key); wide
inline constexpr int kFactorTable = 1;     // FM factors
inline constexpr int kEmbeddingTable = 1;  // MLP embeddings
inline constexpr int kMlpTable = 2;        // MLP dense weights
inline constexpr int kMlpRowFloats = 64;   // floats per row of kMlpTable

struct DenseLayerLayout {
  size_t in = 0;
  size_t out = 0;
  size_t w_offset = 0;  // into the flat vector
  size_t b_offset = 0;
  bool relu = true;  // false for the output layer
};

struct MlpLayout {
  int num_fields = 1;  // Criteo: 39 + EmbeddedCrossSlots
  int num_numeric = 0;
  int embedding_dim = 16;
  size_t input_dim = 0;  // num_fields * embedding_dim + num_numeric
  std::vector<DenseLayerLayout> layers;  // hidden layers, then the output
  size_t num_params = 0;                 // without the padding
  uint64_t dense_rows = 0;               // rows of kMlpTable

  size_t padded_params() const { return dense_rows * kMlpRowFloats; }
};

// The embedding dimension with its default (16) and the hidden widths with
// theirs (256, 128).
int EmbeddingDim(const pb::ModelConfig& model);
std::vector<int> HiddenWidths(const pb::ModelConfig& model);

// The layout of an MLP job (model.kind KIND_MLP). InvalidArgument naming the
// field when embedding_dim is not in 1..1024, a hidden width not in
// 1..65536, there are more than 16 hidden layers, the weights would not
// fit in 2^31 floats, or dropout is not in [0, 1).
absl::StatusOr<MlpLayout> MlpLayoutFromJob(const pb::JobConfig& job);

}  // namespace petrel

#endif  // PETREL_JOB_MODEL_LAYOUT_H_
