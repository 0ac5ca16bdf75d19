// The keys of petrel-bench's Petrel workloads. A run draws its request's
// keys once, by one of three distributions (--key_dist):
//   sequential  keys 0..n-1 of the run (BenchKey): the historical default.
//   uniform     n distinct key numbers drawn uniformly from [0, key_space),
//               in random order: a request spread over the key space.
//   zipf        n draws, with replacement, of a Zipf(exponent) variable over
//               the key numbers [0, key_space) (number 0 the most frequent):
//               the shape of a CTR batch, duplicates included.
// Key number i of run `run` of worker `rank` is the key rank << 52 |
// run << 32 | i (RandomBenchKey), so every run and every worker has keys
// of its own and the sums on the server are known exactly.
//
// Thread safety: the functions are stateless. Zipf draws come from
// base/zipf_sampler.h.

#ifndef PETREL_TOOLS_BENCH_BENCH_KEYS_H_
#define PETREL_TOOLS_BENCH_BENCH_KEYS_H_

#include <cstdint>
#include <random>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

#include "van/buffer.h"

namespace petrel {

enum class KeyDist { kSequential, kUniform, kZipf };

// "sequential", "uniform" or "zipf"; InvalidArgument naming --key_dist
// otherwise.
absl::StatusOr<KeyDist> ParseKeyDist(absl::string_view name);
std::string KeyDistName(KeyDist dist);

// Largest --key_space of the random distributions (key numbers fit in the
// low 32 bits of a key), and the ranks and runs RandomBenchKey can tell
// apart.
inline constexpr int64_t kMaxKeySpace = int64_t{1} << 32;
inline constexpr int kMaxRandomKeyRanks = 1 << 12;
inline constexpr int64_t kMaxRandomKeyRuns = int64_t{1} << 20;

// rank << 52 | run << 32 | number. REQUIRES: 0 <= rank < 4096,
// 0 <= run < 2^20, 0 <= number < 2^32.
uint64_t RandomBenchKey(int rank, int64_t run, int64_t number);

// What a run's keys are drawn from.
struct KeyDrawOptions {
  KeyDist dist = KeyDist::kSequential;
  int64_t num_keys = 1;           // keys per request; >= 1
  int64_t key_space = 100000000;  // random dists: key numbers [0, key_space)
  double zipf_exponent = 1.1;     // zipf: > 0
};

// InvalidArgument naming the flag unless num_keys is in [1, 2^20],
// key_space in [1, kMaxKeySpace] (uniform: >= num_keys, as its keys are
// distinct) and zipf_exponent in (0, 10].
absl::Status ValidateKeyDrawOptions(const KeyDrawOptions& options);

// The keys of one request of run `run` of worker `rank`, drawn with a
// generator seeded from (rank, run) so a run is reproducible.
// ResourceExhausted when a random distribution's rank or run is past what
// RandomBenchKey can tell apart. REQUIRES: ValidateKeyDrawOptions passed.
absl::StatusOr<SArray<uint64_t>> DrawRunKeys(const KeyDrawOptions& options,
                                             int rank, int64_t run);

}  // namespace petrel

#endif  // PETREL_TOOLS_BENCH_BENCH_KEYS_H_
