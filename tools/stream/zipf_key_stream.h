// ZipfKeyStream: the key stream of petrel-stream. Batches of Zipf draws
// over `key_space` ranks (base/zipf_sampler.h), each rank's key a fixed
// bijective hash of it (so keys spread over the servers' key ranges), a
// batch's keys sorted and deduplicated as a worker's batch is; and the
// number of distinct ranks drawn so far, counted exactly in a bitmap of
// key_space bits (key_space / 8 bytes of this process's memory).
//
// Thread safety: not thread-safe.
#ifndef PETREL_TOOLS_STREAM_ZIPF_KEY_STREAM_H_
#define PETREL_TOOLS_STREAM_ZIPF_KEY_STREAM_H_

#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "absl/status/statusor.h"

#include "base/zipf_sampler.h"

namespace petrel {

struct ZipfKeyStreamOptions {
  int64_t key_space = int64_t{1} << 31;  // ranks 1..key_space; 1..2^36
  double exponent = 0.8;                 // (0, 10]
  uint64_t seed = 1;
  int64_t draws_per_batch = 16384;  // 1..2^24
};

class ZipfKeyStream {
 public:
  // InvalidArgument naming the option out of range.
  static absl::StatusOr<std::unique_ptr<ZipfKeyStream>> Create(
      const ZipfKeyStreamOptions& options);

  // The key of rank `rank` (a bijection of uint64).
  static uint64_t KeyOf(uint64_t rank) { return rank * 0x9e3779b97f4a7c15ull; }

  // The next batch: its distinct keys, ascending.
  std::vector<uint64_t> Next();

  uint64_t draws() const { return draws_; }
  uint64_t distinct() const { return distinct_; }

 private:
  explicit ZipfKeyStream(const ZipfKeyStreamOptions& options);

  const ZipfKeyStreamOptions options_;
  const ZipfSampler zipf_;
  std::mt19937_64 rng_;
  std::vector<uint64_t> seen_;  // bit r - 1: rank r drawn
  uint64_t draws_ = 0;
  uint64_t distinct_ = 0;
};

}  // namespace petrel

#endif  // PETREL_TOOLS_STREAM_ZIPF_KEY_STREAM_H_
