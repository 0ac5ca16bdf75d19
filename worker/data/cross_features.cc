#include "worker/data/cross_features.h"

#include <array>
#include <utility>

#include "worker/data/feature_hash.h"

namespace petrel {
namespace {

// Seeds of the cross keys' hash domain.
constexpr uint64_t kCrossSeed = 0x5c7e2a4f91d3b86bULL;
constexpr uint64_t kPairMul = 0x9e3779b97f4a7c15ULL;

// Most fields whose first key AppendCrosses keeps per example.
constexpr int kMaxFields = 128;

class CrossingReader : public Reader {
 public:
  CrossingReader(std::unique_ptr<Reader> inner, std::vector<CrossPair> pairs,
                 int base_fields, bool keep_fields)
      : inner_(std::move(inner)),
        pairs_(std::move(pairs)),
        base_fields_(base_fields),
        keep_fields_(keep_fields) {}

  absl::StatusOr<bool> Next(int max_examples, Batch* batch) override {
    absl::StatusOr<bool> more = inner_->Next(max_examples, batch);
    if (!more.ok() || !*more) return more;
    AppendCrosses(pairs_, base_fields_, keep_fields_, batch);
    return true;
  }
  absl::Status Rewind() override { return inner_->Rewind(); }
  int64_t malformed_lines() const override { return inner_->malformed_lines(); }
  int64_t next_offset() const override { return inner_->next_offset(); }
  double fraction_read() const override { return inner_->fraction_read(); }
  absl::Status SeekToOffset(int64_t offset) override {
    return inner_->SeekToOffset(offset);
  }

 private:
  const std::unique_ptr<Reader> inner_;
  const std::vector<CrossPair> pairs_;
  const int base_fields_;
  const bool keep_fields_;
};

}  // namespace

uint64_t CrossKey(int a, int b, uint64_t key_a, uint64_t key_b) {
  const uint64_t pair = static_cast<uint64_t>(a) * 256 + b + 1;
  uint64_t h = Mix64(key_a ^ kCrossSeed ^ (pair * kPairMul));
  h = Mix64(h + key_b * 0xc2b2ae3d27d4eb4fULL);
  return h == ~uint64_t{0} ? h - 1 : h;  // never kBiasKey
}

void AppendCrosses(const std::vector<CrossPair>& pairs, int base_fields,
                   bool keep_fields, Batch* batch) {
  if (pairs.empty()) {
    if (!keep_fields) batch->fields.clear();
    return;
  }
  const size_t n = batch->size();
  Batch& b = *batch;
  std::vector<uint64_t> keys;
  std::vector<float> values;
  std::vector<uint32_t> fields, offsets;
  const size_t reserve = b.nnz() + n * pairs.size();
  keys.reserve(reserve);
  values.reserve(reserve);
  if (keep_fields) fields.reserve(reserve);
  offsets.reserve(n + 1);
  offsets.push_back(0);
  std::array<uint64_t, kMaxFields> key_of;
  std::array<bool, kMaxFields> present;
  for (size_t i = 0; i < n; ++i) {
    present.fill(false);
    for (uint32_t j = b.offsets[i]; j < b.offsets[i + 1]; ++j) {
      keys.push_back(b.keys[j]);
      values.push_back(b.values[j]);
      if (keep_fields) fields.push_back(b.fields[j]);
      const uint32_t f = b.fields[j];
      if (f < static_cast<uint32_t>(base_fields) && f < kMaxFields &&
          !present[f]) {
        present[f] = true;
        key_of[f] = b.keys[j];
      }
    }
    for (size_t p = 0; p < pairs.size(); ++p) {
      const CrossPair& c = pairs[p];
      if (c.a >= kMaxFields || c.b >= kMaxFields || !present[c.a] ||
          !present[c.b]) {
        continue;
      }
      keys.push_back(CrossKey(c.a, c.b, key_of[c.a], key_of[c.b]));
      values.push_back(1.0f);
      if (keep_fields) fields.push_back(static_cast<uint32_t>(base_fields + p));
    }
    offsets.push_back(static_cast<uint32_t>(keys.size()));
  }
  b.keys = std::move(keys);
  b.values = std::move(values);
  b.fields = std::move(fields);
  b.offsets = std::move(offsets);
}

std::unique_ptr<Reader> NewCrossingReader(std::unique_ptr<Reader> inner,
                                          std::vector<CrossPair> pairs,
                                          int base_fields, bool keep_fields) {
  return std::make_unique<CrossingReader>(std::move(inner), std::move(pairs),
                                          base_fields, keep_fields);
}

}  // namespace petrel
