#include "kernels/testing/random_batch.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "glog/logging.h"

#include "kernels/dedup.h"

namespace petrel {
namespace testing {
namespace {

uint64_t SplitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

void RandomBatch::Deduplicate() { CHECK(Dedup(keys, &unique, &inverse).ok()); }

SparseBatchView RandomBatch::View() const {
  SparseBatchView view;
  view.offsets = offsets;
  view.inverse = inverse;
  view.values = values;
  return view;
}

FieldBatchView RandomBatch::FieldView() const {
  FieldBatchView view;
  view.sparse = View();
  view.fields = fields;
  view.num_fields = num_fields;
  return view;
}

void AssignRandomFields(size_t num_fields, std::mt19937_64* rng,
                        RandomBatch* batch) {
  CHECK_GT(num_fields, 0u);
  std::uniform_int_distribution<uint32_t> pick(
      0, static_cast<uint32_t>(num_fields - 1));
  batch->num_fields = num_fields;
  batch->fields.resize(batch->keys.size());
  for (uint32_t& f : batch->fields) f = pick(*rng);
}

uint64_t FreshSeed() {
  std::random_device device;
  return (uint64_t{device()} << 32) ^ device();
}

std::vector<float> RandomNonZero(size_t n, float lo, float hi,
                                 std::mt19937_64* rng) {
  std::uniform_real_distribution<float> magnitude(lo, hi);
  std::bernoulli_distribution negative(0.5);
  std::vector<float> out(n);
  for (float& x : out) x = negative(*rng) ? -magnitude(*rng) : magnitude(*rng);
  return out;
}

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() &&
         (a.empty() ||
          std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

double Gamma(size_t n) {
  const double u = std::ldexp(1.0, -24);
  const double nu = static_cast<double>(n) * u;
  CHECK_LT(nu, 0.5) << "too many roundings for a meaningful bound";
  return nu / (1.0 - nu);
}

RandomBatch MakeRandomBatch(size_t examples, size_t min_features,
                            size_t max_features, size_t key_pool,
                            std::mt19937_64* rng) {
  CHECK_GE(key_pool, 2u);
  std::vector<uint64_t> pool(key_pool);
  for (uint64_t& key : pool) key = (*rng)();
  pool[0] = 0;
  pool[1] = std::numeric_limits<uint64_t>::max();
  std::uniform_int_distribution<size_t> count(min_features, max_features);
  std::uniform_int_distribution<size_t> pick(0, key_pool - 1);
  std::bernoulli_distribution positive(0.5);
  RandomBatch batch;
  batch.offsets.push_back(0);
  for (size_t i = 0; i < examples; ++i) {
    batch.labels.push_back(positive(*rng) ? 1.0f : 0.0f);
    const size_t features = count(*rng);
    for (size_t f = 0; f < features; ++f)
      batch.keys.push_back(pool[pick(*rng)]);
    batch.offsets.push_back(static_cast<uint32_t>(batch.keys.size()));
  }
  batch.values = RandomNonZero(batch.keys.size(), 0.1f, 2.0f, rng);
  return batch;
}

RandomBatch MakeCriteoLikeBatch(size_t examples, uint64_t vocab,
                                std::mt19937_64* rng) {
  constexpr int kNumeric = 13;
  constexpr int kCategorical = 26;
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::bernoulli_distribution positive(0.25);
  const double log_vocab = std::log(static_cast<double>(vocab));
  RandomBatch batch;
  batch.num_fields = kNumeric + kCategorical;
  batch.offsets.push_back(0);
  for (size_t i = 0; i < examples; ++i) {
    batch.labels.push_back(positive(*rng) ? 1.0f : 0.0f);
    for (int field = 0; field < kNumeric; ++field) {
      batch.keys.push_back(SplitMix64(uint64_t(field) << 56));
      batch.fields.push_back(field);
      const double count = std::floor(std::exp(unit(*rng) * 8.0));
      batch.values.push_back(static_cast<float>(std::log1p(count)) + 0.1f);
    }
    for (int field = kNumeric; field < kNumeric + kCategorical; ++field) {
      // Log-uniform ranks: P(rank r) ~ 1/r, a Zipf law of exponent 1.
      const auto rank = static_cast<uint64_t>(std::exp(unit(*rng) * log_vocab));
      batch.keys.push_back(SplitMix64((uint64_t(field) << 56) ^ rank));
      batch.fields.push_back(field);
      batch.values.push_back(1.0f);
    }
    batch.offsets.push_back(static_cast<uint32_t>(batch.keys.size()));
  }
  return batch;
}

RandomBatch MakeBenchmarkBatch(size_t examples, std::mt19937_64* rng) {
  RandomBatch batch = MakeCriteoLikeBatch(examples, 1000000, rng);
  batch.Deduplicate();
  return batch;
}

}  // namespace testing
}  // namespace petrel
