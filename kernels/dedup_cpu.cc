// CPU Dedup. Measured by dedup_benchmark.cc on 1024 x 39 Criteo-like keys
// (numbers in its header): the open-addressing table beats
// absl::flat_hash_map and the sort, so Dedup uses it.
#include <algorithm>
#include <cstddef>
#include <limits>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "glog/logging.h"

#include "kernels/dedup.h"
#include "kernels/internal/dedup_impl.h"

namespace petrel {
namespace internal {
namespace {

constexpr uint32_t kMaxKeys = std::numeric_limits<uint32_t>::max();

// A slot is live in the current call when its stamp equals the call's
// generation, so the table never needs clearing between calls.
struct Slot {
  uint64_t key;
  uint32_t id;
  uint32_t stamp;
};

struct Table {
  std::vector<Slot> slots;
  uint32_t generation = 0;
};

// Starts a call: returns the table sized for `num_keys` at load <= 1/2 and
// the generation that marks live slots.
uint32_t BeginCall(Table* table, size_t num_keys, int* shift) {
  size_t capacity = 16;
  int bits = 4;
  while (capacity < 2 * num_keys) {
    capacity <<= 1;
    ++bits;
  }
  *shift = 64 - bits;
  if (table->slots.size() < capacity || table->generation == kMaxKeys) {
    // Growing or wrapping the stamp: start over with all slots dead.
    table->slots.assign(std::max(capacity, table->slots.size()), Slot{0, 0, 0});
    table->generation = 0;
  }
  // A smaller batch than the table uses a prefix of it; probing wraps
  // within `capacity`, so only the prefix is ever touched.
  return ++table->generation;
}

}  // namespace

void DedupOpenAddressing(absl::Span<const uint64_t> keys,
                         std::vector<uint64_t>* unique,
                         std::vector<uint32_t>* inverse) {
  // One table per thread, reused across calls: no allocation in steady state.
  thread_local Table table;
  int shift = 0;
  const uint32_t gen = BeginCall(&table, keys.size(), &shift);
  const size_t mask = (size_t{1} << (64 - shift)) - 1;
  Slot* slots = table.slots.data();
  unique->clear();
  unique->reserve(keys.size());
  inverse->resize(keys.size());
  uint32_t* inv = inverse->data();
  for (size_t j = 0; j < keys.size(); ++j) {
    const uint64_t key = keys[j];
    // Fibonacci hashing: the top bits of key * 2^64/phi spread both
    // well-mixed hashes and small consecutive libsvm indices.
    size_t pos = (key * 0x9E3779B97F4A7C15ull) >> shift;
    while (true) {
      Slot& slot = slots[pos];
      if (slot.stamp != gen) {
        slot = Slot{key, static_cast<uint32_t>(unique->size()), gen};
        inv[j] = slot.id;
        unique->push_back(key);
        break;
      }
      if (slot.key == key) {
        inv[j] = slot.id;
        break;
      }
      pos = (pos + 1) & mask;
    }
  }
}

void DedupFlatHashMap(absl::Span<const uint64_t> keys,
                      std::vector<uint64_t>* unique,
                      std::vector<uint32_t>* inverse) {
  absl::flat_hash_map<uint64_t, uint32_t> ids;
  ids.reserve(keys.size());
  unique->clear();
  unique->reserve(keys.size());
  inverse->resize(keys.size());
  for (size_t j = 0; j < keys.size(); ++j) {
    auto [it, inserted] =
        ids.try_emplace(keys[j], static_cast<uint32_t>(unique->size()));
    if (inserted) unique->push_back(keys[j]);
    (*inverse)[j] = it->second;
  }
}

void DedupSort(absl::Span<const uint64_t> keys, std::vector<uint64_t>* unique,
               std::vector<uint32_t>* inverse) {
  const size_t n = keys.size();
  std::vector<std::pair<uint64_t, uint32_t>> sorted(n);
  for (size_t j = 0; j < n; ++j)
    sorted[j] = {keys[j], static_cast<uint32_t>(j)};
  std::sort(sorted.begin(), sorted.end());
  // first[p] = first position holding keys[p]; within a group the pairs are
  // sorted by position, so the group's first pair has the smallest one.
  std::vector<uint32_t> first(n);
  for (size_t s = 0; s < n; ++s) {
    const bool starts = s == 0 || sorted[s].first != sorted[s - 1].first;
    first[sorted[s].second] =
        starts ? sorted[s].second : first[sorted[s - 1].second];
  }
  unique->clear();
  unique->reserve(keys.size());
  inverse->resize(n);
  // Scanning positions in order numbers groups by first appearance; a
  // group's first position is reached before its later ones.
  for (size_t j = 0; j < n; ++j) {
    if (first[j] == j) {
      (*inverse)[j] = static_cast<uint32_t>(unique->size());
      unique->push_back(keys[j]);
    } else {
      (*inverse)[j] = (*inverse)[first[j]];
    }
  }
}

}  // namespace internal

absl::Status Dedup(absl::Span<const uint64_t> keys,
                   std::vector<uint64_t>* unique,
                   std::vector<uint32_t>* inverse) {
  CHECK(unique != nullptr);
  CHECK(inverse != nullptr);
  if (keys.size() >= internal::kMaxKeys) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch has ", keys.size(), " keys, at most ",
                     internal::kMaxKeys - 1, " fit a uint32 inverse index"));
  }
  internal::DedupOpenAddressing(keys, unique, inverse);
  return absl::OkStatus();
}

}  // namespace petrel
