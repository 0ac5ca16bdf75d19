#include "cluster/key_range_map.h"

#include <algorithm>
#include <utility>

#include "absl/numeric/int128.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "glog/logging.h"

namespace petrel {
namespace {

// Start of range i when [0, 2^64) is cut into n equal ranges:
// ceil(i * 2^64 / n). Rounding up (not down) makes hash h fall in range
// floor(h * n / 2^64), which OwnerOf computes without a search.
// REQUIRES: 0 <= i < n <= KeyRangeMap::kMaxRanges.
uint64_t UniformBegin(uint64_t i, uint64_t n) {
  const absl::uint128 scaled = absl::MakeUint128(i, 0);
  return absl::Uint128Low64((scaled + (n - 1)) / n);
}

// Index of the uniform range holding hash h: floor(h * n / 2^64).
uint64_t UniformIndex(uint64_t h, uint64_t n) {
  return absl::Uint128High64(absl::uint128(h) * n);
}

bool IsUniformSplit(const std::vector<uint64_t>& begins) {
  const uint64_t n = begins.size();
  for (uint64_t i = 0; i < n; ++i) {
    if (begins[i] != UniformBegin(i, n)) return false;
  }
  return true;
}

}  // namespace

uint64_t HashKey(uint64_t key) {
  // splitmix64 (Steele, Lea, Flood 2014): add the golden-ratio increment,
  // then the variant-13 finalizer. Every step (add, xor-shift, multiply by an
  // odd constant) is invertible, so the whole map is a bijection.
  uint64_t z = key + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

KeyRangeMap::KeyRangeMap(std::vector<uint64_t> begins,
                         std::vector<int32_t> owners, int num_servers)
    : begins_(std::move(begins)),
      owners_(std::move(owners)),
      num_servers_(num_servers),
      uniform_(IsUniformSplit(begins_)) {}

absl::StatusOr<KeyRangeMap> KeyRangeMap::Uniform(int num_servers,
                                                 int virtual_nodes) {
  if (num_servers < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "key range map needs num_servers >= 1, got ", num_servers));
  }
  if (virtual_nodes < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "key range map needs virtual_nodes >= 1, got ", virtual_nodes));
  }
  const int64_t n = int64_t{num_servers} * virtual_nodes;
  if (n > kMaxRanges) {
    return absl::InvalidArgumentError(absl::StrCat(
        "key range map with ", num_servers, " servers x ", virtual_nodes,
        " virtual nodes has ", n, " ranges, more than the limit ", kMaxRanges));
  }
  std::vector<uint64_t> begins(n);
  std::vector<int32_t> owners(n);
  for (int64_t i = 0; i < n; ++i) {
    begins[i] = UniformBegin(i, n);
    owners[i] = static_cast<int32_t>(i % num_servers);
  }
  return KeyRangeMap(std::move(begins), std::move(owners), num_servers);
}

absl::StatusOr<KeyRangeMap> KeyRangeMap::FromRanges(
    std::vector<uint64_t> begins, std::vector<int32_t> owners,
    int num_servers) {
  if (num_servers < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "key range map needs num_servers >= 1, got ", num_servers));
  }
  if (begins.empty()) {
    return absl::InvalidArgumentError("key range map has no ranges");
  }
  if (begins.size() > static_cast<uint64_t>(kMaxRanges)) {
    return absl::InvalidArgumentError(
        absl::StrCat("key range map has ", begins.size(),
                     " ranges, more than the limit ", kMaxRanges));
  }
  if (owners.size() != begins.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("key range map has ", begins.size(), " range begins but ",
                     owners.size(), " owners"));
  }
  if (begins[0] != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "key range map's first range begins at ", begins[0], ", not 0"));
  }
  for (size_t i = 1; i < begins.size(); ++i) {
    if (begins[i] <= begins[i - 1]) {
      return absl::InvalidArgumentError(absl::StrCat(
          "key range map begins are not strictly increasing: range ", i,
          " begins at ", begins[i], " after range ", i - 1, " at ",
          begins[i - 1]));
    }
  }
  for (size_t i = 0; i < owners.size(); ++i) {
    if (owners[i] < 0 || owners[i] >= num_servers) {
      return absl::InvalidArgumentError(
          absl::StrCat("key range map range ", i, " has owner ", owners[i],
                       ", outside [0, ", num_servers, ")"));
    }
  }
  return KeyRangeMap(std::move(begins), std::move(owners), num_servers);
}

size_t KeyRangeMap::RangeOf(uint64_t key) const {
  const uint64_t h = HashKey(key);
  size_t index;
  if (uniform_) {
    index = UniformIndex(h, begins_.size());
  } else {
    // The last range with begin <= h; begins_[0] == 0 guarantees one exists.
    index = std::upper_bound(begins_.begin(), begins_.end(), h) -
            begins_.begin() - 1;
  }
  DCHECK_LT(index, owners_.size());
  return index;
}

int KeyRangeMap::OwnerOf(uint64_t key) const { return owners_[RangeOf(key)]; }

void KeyRangeMap::OwnersOf(const uint64_t* keys, size_t n,
                           uint32_t* owners) const {
  if (!uniform_) {
    for (size_t i = 0; i < n; ++i) owners[i] = OwnerOf(keys[i]);
    return;
  }
  const uint64_t ranges = begins_.size();
  const int32_t* owner = owners_.data();
  for (size_t i = 0; i < n; ++i) {
    owners[i] =
        static_cast<uint32_t>(owner[UniformIndex(HashKey(keys[i]), ranges)]);
  }
}

}  // namespace petrel
