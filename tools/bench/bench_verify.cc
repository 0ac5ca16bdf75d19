#include "tools/bench/bench_verify.h"

#include <algorithm>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace petrel {
namespace {

// Spread samples between the first and the last value in sampled mode.
constexpr size_t kInnerSamples = 62;

absl::Status Mismatch(size_t i, float want, float got) {
  return absl::DataLossError(
      absl::StrCat("value ", i, " is ", got, ", expected ", want));
}

}  // namespace

SArray<float> MakePattern(size_t n) {
  SArray<float> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = PatternValue(i);
  return out;
}

uint64_t BenchKey(int rank, int64_t run, int64_t k) {
  return (static_cast<uint64_t>(rank) << 40) |
         (static_cast<uint64_t>(run) << 20) | static_cast<uint64_t>(k);
}

namespace {

// Checks got[i] == want(i) over every position (kFull) or the sampled ones.
template <typename WantFn>
absl::Status CheckAgainst(const SArray<float>& got, size_t want_size,
                          CheckMode mode, const WantFn& want) {
  if (got.size() != want_size) {
    return absl::DataLossError(
        absl::StrCat("got ", got.size(), " values, expected ", want_size));
  }
  if (want_size == 0) return absl::OkStatus();
  const float* v = got.data();
  auto check = [&](size_t i) {
    const float w = want(i);
    return v[i] == w ? absl::OkStatus() : Mismatch(i, w, v[i]);
  };
  if (mode == CheckMode::kFull) {
    // Find a mismatch with a tight loop, then report the first one.
    bool all_equal = true;
    for (size_t i = 0; i < want_size; ++i) all_equal &= v[i] == want(i);
    if (all_equal) return absl::OkStatus();
    for (size_t i = 0; i < want_size; ++i) {
      if (absl::Status s = check(i); !s.ok()) return s;
    }
    return absl::OkStatus();
  }
  const size_t last = want_size - 1;
  if (absl::Status s = check(0); !s.ok()) return s;
  for (size_t j = 1; j <= kInnerSamples; ++j) {
    if (absl::Status s = check(last * j / (kInnerSamples + 1)); !s.ok()) {
      return s;
    }
  }
  return check(last);
}

}  // namespace

absl::Status CheckPatternMultiple(const SArray<float>& got, size_t want_size,
                                  int64_t multiple, CheckMode mode) {
  const float m = static_cast<float>(multiple);
  return CheckAgainst(got, want_size, mode,
                      [m](size_t i) { return m * PatternValue(i); });
}

absl::Status CheckMultipleOf(const SArray<float>& got,
                             const SArray<float>& base, int64_t multiple,
                             CheckMode mode) {
  const float m = static_cast<float>(multiple);
  const float* b = base.data();
  return CheckAgainst(got, base.size(), mode,
                      [m, b](size_t i) { return m * b[i]; });
}

SArray<float> PushSumsPerPosition(const SArray<uint64_t>& keys,
                                  const SArray<float>& vals) {
  const size_t n = keys.size();
  const size_t dim = vals.size() / n;
  // Index of each key's first position, and the sums per distinct key.
  absl::flat_hash_map<uint64_t, uint32_t> first;
  first.reserve(n);
  std::vector<uint32_t> slot(n);
  for (size_t p = 0; p < n; ++p) {
    slot[p] = first.try_emplace(keys[p], static_cast<uint32_t>(first.size()))
                  .first->second;
  }
  if (first.size() == n) return vals;
  std::vector<float> sums(first.size() * dim, 0.0f);
  for (size_t p = 0; p < n; ++p) {
    for (size_t j = 0; j < dim; ++j)
      sums[slot[p] * dim + j] += vals[p * dim + j];
  }
  SArray<float> out(vals.size());
  for (size_t p = 0; p < n; ++p) {
    std::copy_n(&sums[slot[p] * dim], dim, &out[p * dim]);
  }
  return out;
}

int64_t MaxExactMultipleOf(const SArray<float>& base) {
  float top = 1;
  for (float v : base) top = std::max(top, v);
  return std::max<int64_t>(1, (int64_t{1} << 24) / static_cast<int64_t>(top));
}

}  // namespace petrel
