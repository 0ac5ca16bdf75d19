#include "tools/stream/zipf_key_stream.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace petrel {

absl::StatusOr<std::unique_ptr<ZipfKeyStream>> ZipfKeyStream::Create(
    const ZipfKeyStreamOptions& options) {
  if (options.key_space < 1 || options.key_space > (int64_t{1} << 36)) {
    return absl::InvalidArgumentError(
        absl::StrCat("key_space = ", options.key_space, " is not in 1..2^36"));
  }
  if (!(options.exponent > 0 && options.exponent <= 10)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "zipf_exponent = ", options.exponent, " is not in (0, 10]"));
  }
  if (options.draws_per_batch < 1 ||
      options.draws_per_batch > (int64_t{1} << 24)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "draws_per_batch = ", options.draws_per_batch, " is not in 1..2^24"));
  }
  return std::unique_ptr<ZipfKeyStream>(new ZipfKeyStream(options));
}

ZipfKeyStream::ZipfKeyStream(const ZipfKeyStreamOptions& options)
    : options_(options),
      zipf_(options.key_space, options.exponent),
      rng_(options.seed),
      seen_((static_cast<uint64_t>(options.key_space) + 63) / 64, 0) {}

std::vector<uint64_t> ZipfKeyStream::Next() {
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  auto u01 = [&] { return uniform(rng_); };
  std::vector<uint64_t> keys(static_cast<size_t>(options_.draws_per_batch));
  for (uint64_t& key : keys) {
    const uint64_t rank = static_cast<uint64_t>(zipf_.Sample(u01));
    uint64_t& word = seen_[(rank - 1) / 64];
    const uint64_t bit = uint64_t{1} << ((rank - 1) % 64);
    if ((word & bit) == 0) {
      word |= bit;
      ++distinct_;
    }
    key = KeyOf(rank);
  }
  draws_ += keys.size();
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  return keys;
}

}  // namespace petrel
