// Generator: Criteo-like synthetic click data with a known ground-truth
// logistic model, for petrel-datagen.
//
// Each example has 13 integer fields (log-normal counts, some missing) and
// 26 categorical fields whose values follow Zipf distributions over
// vocabularies of 10^3..10^6 values, written as 8-digit hex strings. The
// features are exactly what worker/ readers produce: Criteo keys from
// worker/data/feature_hash.h, or for libsvm the index (key mod 2^bits) + 1 with
// the value counting colliding fields of one example.
//
// Ground truth: every feature's model index m = (key mod 2^bits) + 1 (the
// libsvm index) has weight weight_stddev * HashNormal(hash(seed, m)); with
// interactions, six field pairs (a, b) add weight_stddev * interaction_scale
// * w(m_a, m_b) when both fields are present, where w has unit variance:
//   interaction_rank 0: w = HashNormal(hash(seed, m_a, m_b)), an independent
//     draw per value pair (a full-rank table: a model must see the pair);
//   interaction_rank k > 0: w = <u(m_a), v(m_b)> / sqrt(k) with k-dim
//     vectors of independent HashNormal draws per value (latent factors, as
//     an FM or an embedding model learns them from each value's examples).
// P(click) = sigmoid(bias + sum of weights), the bias
// set so that the expected positive rate is `positive_rate`. Labels are
// Bernoulli draws of that probability, so the Bayes-optimal log loss of a
// split is the mean entropy of its probabilities.
//
// With max_fields < 39, each example keeps a random subset of its present
// fields (see DatagenOptions::max_fields).
//
// Determinism: the bytes depend only on the options, the stream (0 = train,
// 1 = test) and the example count; train does not depend on test.
//
// Thread safety: const methods are thread-safe.
#ifndef PETREL_TOOLS_DATAGEN_GENERATOR_H_
#define PETREL_TOOLS_DATAGEN_GENERATOR_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

#include "base/zipf_sampler.h"
#include "tools/datagen/random.h"
#include "worker/data/reader.h"

namespace petrel {
namespace datagen {

struct DatagenOptions {
  uint64_t seed = 1;                        // default 1
  DataFormat format = DataFormat::kLibsvm;  // default libsvm
  int index_bits = 24;                      // default 24; 8..62
  double weight_stddev = 0.3;               // default 0.3; > 0
  double positive_rate = 0.25;              // default 0.25; (0, 1)
  double zipf_exponent = 1.1;               // default 1.1; > 0
  bool interactions = false;                // default off
  // With interactions: multiplies their weights. Default 1; (0, 100).
  double interaction_scale = 1.0;
  // With interactions: 0 (default) independent weights per value pair, k in
  // 1..64 rank-k latent-factor weights (see above).
  int interaction_rank = 0;
  // At most this many fields per example, 1..39 (default 39: all). When an
  // example has more present fields, a uniform random subset of this size
  // is kept and the others count as missing, in the text and in the ground
  // truth alike (e.g. 15 for libsvm data with about 15 nonzeros per row).
  int max_fields = 39;
};

// Statistics of the examples written for one split.
struct SplitStats {
  int64_t examples = 0;
  int64_t positives = 0;
  double entropy_sum = 0;  // sum of the true probabilities' entropies (nats)

  double positive_rate() const;
  // Mean entropy of the true probabilities: the Bayes-optimal log loss.
  double bayes_logloss() const;
  // Log loss of the best constant predictor (the positive rate).
  double constant_logloss() const;
};

// One generated example, as a reader returns it, with its true probability.
struct Example {
  float label = 0;
  double probability = 0;
  std::vector<uint64_t> keys;
  std::vector<float> values;
};

class Generator {
 public:
  // InvalidArgument naming the first bad option.
  static absl::StatusOr<Generator> Create(const DatagenOptions& options);

  // Writes `count` examples of `stream` to `path`. InvalidArgument if the
  // file cannot be created, DataLoss if writing fails.
  absl::StatusOr<SplitStats> WriteFile(const std::string& path, uint64_t stream,
                                       int64_t count) const;

  // Appends the text of the first `count` examples of `stream` to *text and
  // adds them to *stats; also returns them in *examples when not null.
  void Generate(uint64_t stream, int64_t count, std::string* text,
                SplitStats* stats, std::vector<Example>* examples) const;

  // The ground-truth logit of an example as the reader returns it (keys and
  // values of options().format), including the bias. REQUIRES: no
  // interactions (they need the fields, which keys do not carry).
  double GroundTruthLogit(absl::Span<const uint64_t> keys,
                          absl::Span<const float> values) const;

  double bias() const { return bias_; }
  const DatagenOptions& options() const { return options_; }

 private:
  struct Raw;  // one example's fields before formatting

  explicit Generator(const DatagenOptions& options);
  uint64_t ModelIndex(uint64_t key) const;
  double Weight(uint64_t model_index) const;
  // The unit-variance interaction weight of model indices a and b.
  double InteractionWeight(uint64_t a, uint64_t b) const;
  // Fills the per-field keys of `raw` and returns the logit without bias.
  double Logit(Raw* raw) const;
  void SampleRaw(Rng* rng, Raw* raw) const;
  // Marks all but max_fields random present fields of `raw` missing.
  void KeepRandomFields(Rng* rng, Raw* raw) const;
  void GenerateFrom(Rng* rng, int64_t count, std::string* text,
                    SplitStats* stats, std::vector<Example>* examples) const;
  void AppendText(const Raw& raw, int label, std::string* text) const;
  void CalibrateBias();

  DatagenOptions options_;
  uint64_t mask_;
  double bias_ = 0;
  std::vector<ZipfSampler> zipf_;  // one per categorical field
};

}  // namespace datagen
}  // namespace petrel

#endif  // PETREL_TOOLS_DATAGEN_GENERATOR_H_
