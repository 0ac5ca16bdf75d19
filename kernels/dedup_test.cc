#include "kernels/dedup.h"

#include <algorithm>
#include <limits>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

#include "kernels/internal/dedup_impl.h"
#include "kernels/testing/random_batch.h"
#include "kernels/testing/traced_rng.h"

namespace petrel {
namespace {

using DedupFn = void (*)(absl::Span<const uint64_t>, std::vector<uint64_t>*,
                         std::vector<uint32_t>*);

void PublicDedup(absl::Span<const uint64_t> keys, std::vector<uint64_t>* unique,
                 std::vector<uint32_t>* inverse) {
  ASSERT_TRUE(Dedup(keys, unique, inverse).ok());
}

struct Strategy {
  const char* name;
  DedupFn fn;
};

const Strategy kStrategies[] = {
    {"Dedup", &PublicDedup},
    {"OpenAddressing", &internal::DedupOpenAddressing},
    {"FlatHashMap", &internal::DedupFlatHashMap},
    {"Sort", &internal::DedupSort},
};

// The obvious implementation: first appearance gets the next id.
void ReferenceDedup(const std::vector<uint64_t>& keys,
                    std::vector<uint64_t>* unique,
                    std::vector<uint32_t>* inverse) {
  std::unordered_map<uint64_t, uint32_t> ids;
  unique->clear();
  inverse->clear();
  for (uint64_t key : keys) {
    auto it = ids.find(key);
    if (it == ids.end()) {
      it = ids.emplace(key, static_cast<uint32_t>(unique->size())).first;
      unique->push_back(key);
    }
    inverse->push_back(it->second);
  }
}

void ExpectMatchesReference(const Strategy& strategy,
                            const std::vector<uint64_t>& keys,
                            std::vector<uint64_t>* unique,
                            std::vector<uint32_t>* inverse) {
  SCOPED_TRACE(absl::StrCat(strategy.name, " on ", keys.size(), " keys"));
  std::vector<uint64_t> want_unique;
  std::vector<uint32_t> want_inverse;
  ReferenceDedup(keys, &want_unique, &want_inverse);
  strategy.fn(keys, unique, inverse);
  EXPECT_EQ(*unique, want_unique);
  EXPECT_EQ(*inverse, want_inverse);
}

// The keys of a random batch: 1 to 300 examples of 1 to 50 keys each,
// drawn from a pool of 2 to 3000 keys.
std::vector<uint64_t> RandomKeys(std::mt19937_64* rng) {
  std::uniform_int_distribution<size_t> examples(1, 300);
  std::uniform_int_distribution<size_t> pool(2, 3000);
  return testing::MakeRandomBatch(examples(*rng), 1, 50, pool(*rng), rng).keys;
}

TEST(DedupTest, MatchesReferenceOnRandomKeys) {
  testing::TracedRng rng;
  for (int trial = 0; trial < 20; ++trial) {
    const std::vector<uint64_t> keys = RandomKeys(&rng);
    for (const Strategy& strategy : kStrategies) {
      std::vector<uint64_t> unique;
      std::vector<uint32_t> inverse;
      ExpectMatchesReference(strategy, keys, &unique, &inverse);
    }
  }
}

TEST(DedupTest, KeepsOrderOfFirstAppearance) {
  const std::vector<uint64_t> keys = {7, 3, 7, 9, 3, 3, 1};
  for (const Strategy& strategy : kStrategies) {
    SCOPED_TRACE(strategy.name);
    std::vector<uint64_t> unique;
    std::vector<uint32_t> inverse;
    strategy.fn(keys, &unique, &inverse);
    EXPECT_EQ(unique, (std::vector<uint64_t>{7, 3, 9, 1}));
    EXPECT_EQ(inverse, (std::vector<uint32_t>{0, 1, 0, 2, 1, 1, 3}));
  }
}

TEST(DedupTest, HandlesEmptyAndExtremeKeys) {
  const uint64_t kMax = std::numeric_limits<uint64_t>::max();
  const std::vector<std::vector<uint64_t>> cases = {
      {},
      {0},
      {kMax, 0, kMax, 0},
      {0, 0, 0, 0, 0},
  };
  for (const Strategy& strategy : kStrategies) {
    // Stale outputs must be overwritten, not appended to.
    std::vector<uint64_t> unique = {42, 43};
    std::vector<uint32_t> inverse = {5};
    for (const auto& keys : cases) {
      ExpectMatchesReference(strategy, keys, &unique, &inverse);
    }
  }
}

// Consecutive small keys (libsvm indices) and keys equal modulo a power of
// two stress the hash's spread and the probe sequence.
TEST(DedupTest, HandlesStructuredKeys) {
  std::vector<uint64_t> consecutive;
  std::vector<uint64_t> strided;
  for (uint64_t i = 0; i < 5000; ++i) {
    consecutive.push_back(i % 3000);
    strided.push_back((i % 700) << 40);
  }
  for (const Strategy& strategy : kStrategies) {
    std::vector<uint64_t> unique;
    std::vector<uint32_t> inverse;
    ExpectMatchesReference(strategy, consecutive, &unique, &inverse);
    ExpectMatchesReference(strategy, strided, &unique, &inverse);
  }
}

// Reused per-thread state must not leak entries between calls, whatever the
// order of batch sizes.
TEST(DedupTest, CallsOfChangingSizeAreIndependent) {
  testing::TracedRng rng;
  const size_t sizes[] = {5000, 3, 1, 20000, 17, 5000, 0, 64};
  for (const Strategy& strategy : kStrategies) {
    std::vector<uint64_t> unique;
    std::vector<uint32_t> inverse;
    // A small shared pool makes later calls see keys of earlier calls.
    for (size_t n : sizes) {
      std::vector<uint64_t> keys(n);
      for (uint64_t& key : keys) key = rng() % 97;
      ExpectMatchesReference(strategy, keys, &unique, &inverse);
    }
  }
}

// DedupSorted on the CPU: ascending unique keys, each once, and
// unique[inverse[j]] == keys[j]; checked against std::sort + std::unique.
void ExpectSortedDedup(const std::vector<uint64_t>& keys) {
  SCOPED_TRACE(absl::StrCat("DedupSorted on ", keys.size(), " keys"));
  std::vector<uint64_t> want = keys;
  std::sort(want.begin(), want.end());
  want.erase(std::unique(want.begin(), want.end()), want.end());
  // Stale contents must not matter.
  std::vector<uint64_t> unique(keys.size(), 42);
  std::vector<uint32_t> inverse(keys.size(), 7);
  size_t num_unique = 12345;
  ASSERT_TRUE(DedupSorted(Device::Cpu(), keys, absl::MakeSpan(unique),
                          absl::MakeSpan(inverse), &num_unique)
                  .ok());
  ASSERT_EQ(num_unique, want.size());
  unique.resize(num_unique);
  EXPECT_EQ(unique, want);
  for (size_t j = 0; j < keys.size(); ++j) {
    ASSERT_LT(inverse[j], num_unique);
    ASSERT_EQ(unique[inverse[j]], keys[j]) << "position " << j;
  }
}

TEST(DedupSortedTest, MatchesSortOnRandomKeys) {
  testing::TracedRng rng;
  for (int trial = 0; trial < 20; ++trial) {
    const std::vector<uint64_t> keys = RandomKeys(&rng);
    ExpectSortedDedup(keys);
  }
  const uint64_t kMax = std::numeric_limits<uint64_t>::max();
  for (const std::vector<uint64_t>& keys : std::vector<std::vector<uint64_t>>{
           {}, {0}, {kMax, 0, kMax, 0}, {5, 5, 5}, {9, 3, 7, 3, 1}}) {
    ExpectSortedDedup(keys);
  }
}

TEST(DedupSortedTest, RejectsWrongSizes) {
  const std::vector<uint64_t> keys = {3, 1, 3};
  std::vector<uint64_t> unique(3);
  std::vector<uint32_t> inverse(3);
  size_t num_unique = 0;
  const Device cpu = Device::Cpu();
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  EXPECT_EQ(DedupSorted(cpu, keys, absl::MakeSpan(unique).first(2),
                        absl::MakeSpan(inverse), &num_unique)
                .code(),
            kInvalid);
  EXPECT_EQ(DedupSorted(cpu, keys, absl::MakeSpan(unique),
                        absl::MakeSpan(inverse).first(2), &num_unique)
                .code(),
            kInvalid);
  // 2^32 keys do not fit a uint32 inverse; the check runs before any read,
  // so spans of that length over one element are safe here.
  const size_t too_many = size_t{1} << 32;
  EXPECT_EQ(DedupSorted(cpu, absl::MakeConstSpan(keys.data(), too_many),
                        absl::MakeSpan(unique.data(), too_many),
                        absl::MakeSpan(inverse.data(), too_many), &num_unique)
                .code(),
            kInvalid);
}

}  // namespace
}  // namespace petrel
