// Random CSR batches for the kernel tests and benchmarks (test-only library
// petrel_kernels_testing). Every value drawn is non-zero, so a kernel that
// drops a term or mixes up an index cannot pass by multiplying by zero.
//
// Thread safety: functions are thread-compatible; each call uses only the
// generator it is given.
#ifndef PETREL_KERNELS_TESTING_RANDOM_BATCH_H_
#define PETREL_KERNELS_TESTING_RANDOM_BATCH_H_

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/embedding.h"
#include "kernels/sparse_batch.h"

namespace petrel {
namespace testing {

// A CSR batch as worker/data/batch.h stores it, plus its dedup result.
struct RandomBatch {
  std::vector<float> labels;      // [n], 0 or 1
  std::vector<uint64_t> keys;     // [nnz]
  std::vector<float> values;      // [nnz], non-zero
  std::vector<uint32_t> offsets;  // [n + 1]
  std::vector<uint64_t> unique;   // filled by Deduplicate()
  std::vector<uint32_t> inverse;  // [nnz], filled by Deduplicate()
  // The field of every position ([nnz], each < num_fields): set by
  // MakeCriteoLikeBatch and AssignRandomFields, empty otherwise.
  std::vector<uint32_t> fields;
  size_t num_fields = 0;

  size_t num_examples() const { return labels.size(); }
  // Fills unique/inverse with kernels/dedup.h (CHECKs that it succeeds).
  void Deduplicate();
  // The kernels' view; valid while this batch is alive and unchanged.
  SparseBatchView View() const;
  // View() plus the fields, for the embedding kernels.
  FieldBatchView FieldView() const;
};

// A seed from std::random_device, so each test run sees fresh inputs; tests
// print it (SCOPED_TRACE) so that a failure can be replayed.
uint64_t FreshSeed();

// n values of random sign with magnitude uniform in [lo, hi], lo > 0.
std::vector<float> RandomNonZero(size_t n, float lo, float hi,
                                 std::mt19937_64* rng);

// `examples` examples with a uniform number of features in
// [min_features, max_features]; keys drawn from a pool of `key_pool` random
// 64-bit keys (so a small pool gives many duplicates; the pool always holds
// 0 and UINT64_MAX); values of magnitude in [0.1, 2]; labels 0/1.
RandomBatch MakeRandomBatch(size_t examples, size_t min_features,
                            size_t max_features, size_t key_pool,
                            std::mt19937_64* rng);

// Gives every position of `batch` a uniform random field below
// `num_fields` (> 0), so an example may have several positions in a field
// and none in others.
void AssignRandomFields(size_t num_fields, std::mt19937_64* rng,
                        RandomBatch* batch);

// A Criteo-like batch: 39 features per example, 13 numeric fields (value
// log(1 + uniform integer)) and 26 categorical fields (value 1) whose values
// follow a Zipf-like (log-uniform) law over a vocabulary of `vocab` per
// field, each hashed with its field into a 64-bit key. Position f of every
// example is in field f (num_fields = 39).
RandomBatch MakeCriteoLikeBatch(size_t examples, uint64_t vocab,
                                std::mt19937_64* rng);

// The kernel benchmarks' batch: MakeCriteoLikeBatch with a vocabulary of
// 10^6 per field, already deduplicated.
RandomBatch MakeBenchmarkBatch(size_t examples, std::mt19937_64* rng);

// The worst-case relative error of n float32 roundings in a row,
// gamma_n = n u / (1 - n u) with u = 2^-24 (Higham, "Accuracy and Stability
// of Numerical Algorithms", 2nd ed., section 3.1). A float32 sum of n
// products computed left to right differs from the exact sum by at most
// gamma_{n+1} times the sum of the terms' magnitudes (section 4.2); the
// tests bound kernel errors this way, so a bound never fails by bad luck.
double Gamma(size_t n);

// Whether `a` and `b` hold the same floats bit for bit (empty ones
// included, which std::memcmp may not be given: their data may be null).
bool SameBits(const std::vector<float>& a, const std::vector<float>& b);

}  // namespace testing
}  // namespace petrel

#endif  // PETREL_KERNELS_TESTING_RANDOM_BATCH_H_
