#include "tools/bench/bench_verify.h"

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

absl::Status CheckPatternMultiple(const SArray<float>& got, size_t want_size,
                                  int64_t multiple, CheckMode mode) {
  if (got.size() != want_size) {
    return absl::DataLossError(
        absl::StrCat("got ", got.size(), " values, expected ", want_size));
  }
  if (want_size == 0) return absl::OkStatus();
  const float m = static_cast<float>(multiple);
  const float* v = got.data();
  auto check = [&](size_t i) {
    const float want = m * PatternValue(i);
    return v[i] == want ? absl::OkStatus() : Mismatch(i, want, v[i]);
  };
  if (mode == CheckMode::kFull) {
    // Find a mismatch with a tight loop, then report the first one.
    bool all_equal = true;
    for (size_t i = 0; i < want_size; ++i) {
      all_equal &= v[i] == m * PatternValue(i);
    }
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

}  // namespace petrel
