// How petrel-bench checks what it moved through Petrel. Every request
// carries the same value pattern: small integer-valued floats (1, 2, 3, 1,
// ...), so that sums on the server stay exact (below 2^24) and a pulled
// value is always a whole multiple of the pattern. Each worker rank and
// each run uses its own keys, so the expected multiple is known exactly:
// after n pushes into fresh keys a pull must return n × pattern.
//
// Thread safety: stateless functions.

#ifndef PETREL_TOOLS_BENCH_BENCH_VERIFY_H_
#define PETREL_TOOLS_BENCH_BENCH_VERIFY_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"

#include "van/buffer.h"

namespace petrel {

// The largest pattern value; see PatternValue.
inline constexpr int64_t kMaxPatternValue = 3;
// Largest multiple of the pattern (pushes into one key) whose sums are still
// exact in float: kMaxPatternValue * multiple <= 2^24.
inline constexpr int64_t kMaxExactMultiple = (int64_t{1} << 24) / 3;

// The value at position `i` of every pushed value array: 1 + i % 3.
inline float PatternValue(size_t i) {
  return static_cast<float>(1 + i % kMaxPatternValue);
}

// A fresh array of `n` pattern values.
SArray<float> MakePattern(size_t n);

// The key of key number `k` (0 <= k < 2^20) in run number `run`
// (0 <= run < 2^20) of worker `rank` (0 <= rank < 2^24): rank << 40 |
// run << 20 | k. Distinct ranks and runs never share a key.
uint64_t BenchKey(int rank, int64_t run, int64_t k);

// How much of an array CheckPatternMultiple reads.
enum class CheckMode {
  kSampled,  // the first and last value and 62 spread between (hot path)
  kFull,     // every value
};

// OK when `got` holds exactly `want_size` values and each checked value i
// equals multiple × PatternValue(i). DataLoss otherwise, naming the first
// wrong position with the value expected and the value found, or the sizes.
absl::Status CheckPatternMultiple(const SArray<float>& got, size_t want_size,
                                  int64_t multiple, CheckMode mode);

// What one push of `vals` (`vals.size() / keys.size()` values per key, in
// the order of `keys`) adds to each pulled position when keys repeat: value
// j of position p is the sum of value j over every position holding the
// same key as p. Equals `vals` (shared, not copied) when the keys are
// distinct. REQUIRES: keys non-empty, vals.size() a multiple of keys.size().
SArray<float> PushSumsPerPosition(const SArray<uint64_t>& keys,
                                  const SArray<float>& vals);

// Largest multiple of `base` whose float sums are still exact:
// 2^24 / max(base), at least 1. REQUIRES: base holds positive whole numbers.
int64_t MaxExactMultipleOf(const SArray<float>& base);

// Like CheckPatternMultiple, against multiple × base[i] instead of
// multiple × PatternValue(i); `base.size()` is the size wanted.
absl::Status CheckMultipleOf(const SArray<float>& got,
                             const SArray<float>& base, int64_t multiple,
                             CheckMode mode);

}  // namespace petrel

#endif  // PETREL_TOOLS_BENCH_BENCH_VERIFY_H_
