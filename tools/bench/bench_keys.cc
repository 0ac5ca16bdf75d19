#include "tools/bench/bench_keys.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

#include "base/zipf_sampler.h"
#include "tools/bench/bench_verify.h"

namespace petrel {
namespace {

constexpr int64_t kMaxNumKeys = int64_t{1} << 20;
constexpr double kMaxZipfExponent = 10;

// A uniform double in [0, 1) from the top 53 bits of one draw.
double Uniform01(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

// A uniform integer in [0, bound). The modulo bias is below 2^-31 for the
// bounds used here (<= 2^32), far under what a benchmark can see.
uint64_t UniformBelow(std::mt19937_64& rng, uint64_t bound) {
  return rng() % bound;
}

// `n` distinct numbers from [0, space), in random order (Floyd's sampling,
// then a shuffle). REQUIRES: n <= space.
std::vector<uint64_t> DistinctNumbers(int64_t n, int64_t space,
                                      std::mt19937_64& rng) {
  absl::flat_hash_set<uint64_t> seen;
  seen.reserve(static_cast<size_t>(n));
  std::vector<uint64_t> out;
  out.reserve(static_cast<size_t>(n));
  for (int64_t j = space - n; j < space; ++j) {
    const uint64_t t = UniformBelow(rng, static_cast<uint64_t>(j) + 1);
    const uint64_t pick = seen.insert(t).second ? t : static_cast<uint64_t>(j);
    if (pick != t) seen.insert(pick);
    out.push_back(pick);
  }
  std::shuffle(out.begin(), out.end(), rng);
  return out;
}

}  // namespace

absl::StatusOr<KeyDist> ParseKeyDist(absl::string_view name) {
  if (name == "sequential") return KeyDist::kSequential;
  if (name == "uniform") return KeyDist::kUniform;
  if (name == "zipf") return KeyDist::kZipf;
  return absl::InvalidArgumentError(absl::StrCat(
      "--key_dist=", name, " is not one of sequential, uniform, zipf"));
}

std::string KeyDistName(KeyDist dist) {
  switch (dist) {
    case KeyDist::kSequential:
      return "sequential";
    case KeyDist::kUniform:
      return "uniform";
    case KeyDist::kZipf:
      return "zipf";
  }
  return "unknown";
}

uint64_t RandomBenchKey(int rank, int64_t run, int64_t number) {
  return (static_cast<uint64_t>(rank) << 52) |
         (static_cast<uint64_t>(run) << 32) | static_cast<uint64_t>(number);
}

absl::Status ValidateKeyDrawOptions(const KeyDrawOptions& o) {
  if (o.num_keys < 1 || o.num_keys > kMaxNumKeys) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--num_keys=", o.num_keys, " is not in [1, ", kMaxNumKeys, "]"));
  }
  if (o.key_space < 1 || o.key_space > kMaxKeySpace) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--key_space=", o.key_space, " is not in [1, ", kMaxKeySpace, "]"));
  }
  if (o.dist == KeyDist::kUniform && o.key_space < o.num_keys) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--key_space=", o.key_space, " is smaller than --num_keys=", o.num_keys,
        ": --key_dist=uniform draws distinct keys"));
  }
  if (!(o.zipf_exponent > 0 && o.zipf_exponent <= kMaxZipfExponent)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--zipf_exponent=", o.zipf_exponent, " is not in (0, ",
                     kMaxZipfExponent, "]"));
  }
  return absl::OkStatus();
}

absl::StatusOr<SArray<uint64_t>> DrawRunKeys(const KeyDrawOptions& options,
                                             int rank, int64_t run) {
  const size_t n = static_cast<size_t>(options.num_keys);
  SArray<uint64_t> keys(n);
  if (options.dist == KeyDist::kSequential) {
    for (size_t k = 0; k < n; ++k) keys[k] = BenchKey(rank, run, k);
    return keys;
  }
  if (rank < 0 || rank >= kMaxRandomKeyRanks || run < 0 ||
      run >= kMaxRandomKeyRuns) {
    return absl::ResourceExhaustedError(
        absl::StrCat("worker rank ", rank, " run ", run,
                     " is past the random keys' limits (ranks < ",
                     kMaxRandomKeyRanks, ", runs < ", kMaxRandomKeyRuns, ")"));
  }
  std::mt19937_64 rng(RandomBenchKey(rank, run, 0) ^ 0x5eed5eed5eed5eedULL);
  if (options.dist == KeyDist::kUniform) {
    std::vector<uint64_t> numbers =
        DistinctNumbers(options.num_keys, options.key_space, rng);
    for (size_t k = 0; k < n; ++k) {
      keys[k] = RandomBenchKey(rank, run, static_cast<int64_t>(numbers[k]));
    }
    return keys;
  }
  const ZipfSampler zipf(options.key_space, options.zipf_exponent);
  for (size_t k = 0; k < n; ++k) {
    keys[k] = RandomBenchKey(
        rank, run, zipf.Sample([&rng] { return Uniform01(rng); }) - 1);
  }
  return keys;
}

}  // namespace petrel
