#include "cluster/key_range_map.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace petrel {
namespace {

using ::testing::HasSubstr;

// Owner by a linear scan of the ranges: the definition OwnerOf must match.
int ReferenceOwner(const KeyRangeMap& map, uint64_t key) {
  const uint64_t h = HashKey(key);
  const std::vector<uint64_t>& begins = map.begins();
  size_t i = begins.size() - 1;
  while (begins[i] > h) --i;
  return map.owners()[i];
}

void ExpectInvalid(const absl::StatusOr<KeyRangeMap>& map,
                   const std::string& reason) {
  ASSERT_FALSE(map.ok());
  EXPECT_EQ(map.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(map.status().message()), HasSubstr(reason));
}

TEST(KeyRangeMapTest, SpreadsDenseKeysEvenly) {
  constexpr int kServers = 8;
  constexpr uint64_t kKeys = 1000000;
  absl::StatusOr<KeyRangeMap> map = KeyRangeMap::Uniform(kServers, 16);
  ASSERT_TRUE(map.ok()) << map.status();
  std::vector<uint64_t> load(kServers, 0);
  for (uint64_t key = 0; key < kKeys; ++key) {
    const int owner = map->OwnerOf(key);
    ASSERT_GE(owner, 0);
    ASSERT_LT(owner, kServers);
    ++load[owner];
  }
  const double mean = static_cast<double>(kKeys) / kServers;
  const uint64_t busiest = *std::max_element(load.begin(), load.end());
  const uint64_t idlest = *std::min_element(load.begin(), load.end());
  ASSERT_LE(busiest, 1.1 * mean);
  ASSERT_GE(idlest, 0.9 * mean);
  RecordProperty("busiest_over_mean", std::to_string(busiest / mean));
}

TEST(KeyRangeMapTest, SpreadsStridedKeysEvenly) {
  // Keys that share low bits (multiples of 4096) must spread as well.
  constexpr int kServers = 5;
  absl::StatusOr<KeyRangeMap> map = KeyRangeMap::Uniform(kServers, 32);
  ASSERT_TRUE(map.ok()) << map.status();
  std::vector<int> load(kServers, 0);
  constexpr int kKeys = 200000;
  for (uint64_t i = 0; i < kKeys; ++i) ++load[map->OwnerOf(i << 12)];
  EXPECT_LE(*std::max_element(load.begin(), load.end()),
            1.1 * kKeys / kServers);
}

TEST(KeyRangeMapTest, UniformLayout) {
  absl::StatusOr<KeyRangeMap> map = KeyRangeMap::Uniform(3, 4);
  ASSERT_TRUE(map.ok()) << map.status();
  EXPECT_EQ(map->num_servers(), 3);
  ASSERT_EQ(map->begins().size(), 12u);
  ASSERT_EQ(map->owners().size(), 12u);
  EXPECT_EQ(map->begins()[0], 0u);
  const double width = 18446744073709551616.0 / 12;
  for (size_t i = 0; i < 12; ++i) {
    EXPECT_EQ(map->owners()[i], static_cast<int32_t>(i % 3));
    if (i > 0) {
      EXPECT_GT(map->begins()[i], map->begins()[i - 1]);
      EXPECT_NEAR(static_cast<double>(map->begins()[i] - map->begins()[i - 1]),
                  width, width * 1e-9);
    }
  }
}

TEST(KeyRangeMapTest, SingleServerOwnsEverything) {
  absl::StatusOr<KeyRangeMap> map = KeyRangeMap::Uniform(1, 1);
  ASSERT_TRUE(map.ok()) << map.status();
  for (uint64_t key : {uint64_t{0}, uint64_t{1}, uint64_t{12345},
                       std::numeric_limits<uint64_t>::max()}) {
    EXPECT_EQ(map->OwnerOf(key), 0);
  }
}

TEST(KeyRangeMapTest, UniformRejectsBadArguments) {
  ExpectInvalid(KeyRangeMap::Uniform(0, 4), "num_servers >= 1");
  ExpectInvalid(KeyRangeMap::Uniform(-1, 4), "num_servers >= 1");
  ExpectInvalid(KeyRangeMap::Uniform(4, 0), "virtual_nodes >= 1");
  ExpectInvalid(KeyRangeMap::Uniform(1 << 16, 1 << 16), "more than the limit");
}

TEST(KeyRangeMapTest, UniformOwnerMatchesRanges) {
  // The O(1) uniform lookup must agree with the ranges it publishes, for
  // counts that do not divide 2^64 and at the range boundaries themselves.
  for (int servers : {1, 3, 7, 8}) {
    for (int vnodes : {1, 5, 16}) {
      absl::StatusOr<KeyRangeMap> map = KeyRangeMap::Uniform(servers, vnodes);
      ASSERT_TRUE(map.ok()) << map.status();
      for (uint64_t key = 0; key < 20000; ++key) {
        ASSERT_EQ(map->OwnerOf(key), ReferenceOwner(*map, key))
            << servers << " servers, " << vnodes << " vnodes, key " << key;
      }
    }
  }
}

TEST(KeyRangeMapTest, OwnersOfMatchesOwnerOf) {
  // A uniform map (the O(1) loop) and an uneven one (the search).
  absl::StatusOr<KeyRangeMap> uniform = KeyRangeMap::Uniform(8, 32);
  absl::StatusOr<KeyRangeMap> uneven = KeyRangeMap::FromRanges(
      {0, 5, uint64_t{1} << 63}, {2, 0, 1}, /*num_servers=*/3);
  ASSERT_TRUE(uniform.ok()) << uniform.status();
  ASSERT_TRUE(uneven.ok()) << uneven.status();
  std::vector<uint64_t> keys;
  for (uint64_t key = 0; key < 5000; ++key) keys.push_back(key * 0x9e3779b9);
  for (const KeyRangeMap* map : {&*uniform, &*uneven}) {
    std::vector<uint32_t> owners(keys.size());
    map->OwnersOf(keys.data(), keys.size(), owners.data());
    for (size_t i = 0; i < keys.size(); ++i) {
      ASSERT_EQ(static_cast<int>(owners[i]), map->OwnerOf(keys[i])) << i;
    }
  }
}

TEST(KeyRangeMapTest, UniformAndFromRangesAgree) {
  absl::StatusOr<KeyRangeMap> uniform = KeyRangeMap::Uniform(8, 16);
  ASSERT_TRUE(uniform.ok()) << uniform.status();
  absl::StatusOr<KeyRangeMap> rebuilt = KeyRangeMap::FromRanges(
      uniform->begins(), uniform->owners(), uniform->num_servers());
  ASSERT_TRUE(rebuilt.ok()) << rebuilt.status();
  EXPECT_EQ(rebuilt->begins(), uniform->begins());
  EXPECT_EQ(rebuilt->owners(), uniform->owners());
  EXPECT_EQ(rebuilt->num_servers(), 8);
  for (uint64_t key = 0; key < 100000; ++key) {
    ASSERT_EQ(rebuilt->OwnerOf(key), uniform->OwnerOf(key)) << key;
  }
}

TEST(KeyRangeMapTest, NonUniformMapUsesItsRanges) {
  // Nudge one boundary so the map is no longer the uniform split and
  // OwnerOf has to search.
  absl::StatusOr<KeyRangeMap> uniform = KeyRangeMap::Uniform(4, 4);
  ASSERT_TRUE(uniform.ok()) << uniform.status();
  std::vector<uint64_t> begins = uniform->begins();
  begins[5] += uint64_t{1} << 58;  // Ranges are 2^60 wide.
  // Ranges 4 and 5 have different owners, so keys in the moved slice
  // (about 1/64 of them) would get the wrong owner from a uniform lookup.
  std::vector<int32_t> owners = {3, 3, 0, 1, 2, 1, 0, 1,
                                 1, 0, 3, 2, 2, 2, 2, 0};
  absl::StatusOr<KeyRangeMap> map = KeyRangeMap::FromRanges(begins, owners, 4);
  ASSERT_TRUE(map.ok()) << map.status();
  for (uint64_t key = 0; key < 100000; ++key) {
    ASSERT_EQ(map->OwnerOf(key), ReferenceOwner(*map, key)) << key;
  }
}

TEST(KeyRangeMapTest, FromRangesAllowsServerWithNoRange) {
  absl::StatusOr<KeyRangeMap> map =
      KeyRangeMap::FromRanges({0, uint64_t{1} << 63}, {0, 2}, 3);
  ASSERT_TRUE(map.ok()) << map.status();
  for (uint64_t key = 0; key < 10000; ++key) {
    const int owner = map->OwnerOf(key);
    ASSERT_TRUE(owner == 0 || owner == 2) << owner;
    ASSERT_EQ(owner, (HashKey(key) >> 63) == 0 ? 0 : 2);
  }
}

TEST(KeyRangeMapTest, FromRangesRejectsBadInput) {
  ExpectInvalid(KeyRangeMap::FromRanges({0, 10}, {0, 1}, 0),
                "num_servers >= 1");
  ExpectInvalid(KeyRangeMap::FromRanges({}, {}, 2), "no ranges");
  ExpectInvalid(KeyRangeMap::FromRanges({0, 10}, {0}, 2),
                "2 range begins but 1 owners");
  ExpectInvalid(KeyRangeMap::FromRanges({0, 10}, {0, 1, 1}, 2),
                "2 range begins but 3 owners");
  ExpectInvalid(KeyRangeMap::FromRanges({5, 10}, {0, 1}, 2),
                "begins at 5, not 0");
  ExpectInvalid(KeyRangeMap::FromRanges({0, 10, 10}, {0, 1, 0}, 2),
                "not strictly increasing");
  ExpectInvalid(KeyRangeMap::FromRanges({0, 10, 7}, {0, 1, 0}, 2),
                "not strictly increasing");
  ExpectInvalid(KeyRangeMap::FromRanges({0, 10}, {0, 2}, 2),
                "owner 2, outside [0, 2)");
  ExpectInvalid(KeyRangeMap::FromRanges({0, 10}, {-1, 0}, 2),
                "owner -1, outside [0, 2)");
  std::vector<uint64_t> too_many(KeyRangeMap::kMaxRanges + 1);
  for (size_t i = 0; i < too_many.size(); ++i) too_many[i] = i;
  ExpectInvalid(KeyRangeMap::FromRanges(
                    too_many, std::vector<int32_t>(too_many.size(), 0), 1),
                "more than the limit");
}

TEST(KeyRangeMapTest, MapIsCopyable) {
  absl::StatusOr<KeyRangeMap> map = KeyRangeMap::Uniform(4, 8);
  ASSERT_TRUE(map.ok()) << map.status();
  const KeyRangeMap copy = *map;
  KeyRangeMap assigned = *KeyRangeMap::Uniform(1, 1);
  assigned = copy;
  for (uint64_t key = 0; key < 1000; ++key) {
    EXPECT_EQ(assigned.OwnerOf(key), map->OwnerOf(key));
  }
}

TEST(KeyRangeMapTest, HashKeyHasNoCollisions) {
  constexpr uint64_t kKeys = 1000000;
  std::vector<uint64_t> hashes;
  hashes.reserve(2 * kKeys);
  for (uint64_t key = 0; key < kKeys; ++key) {
    hashes.push_back(HashKey(key));
    hashes.push_back(HashKey(~key));  // The top of the key space too.
  }
  std::sort(hashes.begin(), hashes.end());
  EXPECT_EQ(std::adjacent_find(hashes.begin(), hashes.end()), hashes.end());
}

TEST(KeyRangeMapTest, HashKeyIsStable) {
  // Part of the wire contract: every node must hash a key the same way.
  // Reference values computed independently (Python) from the splitmix64
  // definition; HashKey(0) is splitmix64's well-known first output.
  EXPECT_EQ(HashKey(0), 0xe220a8397b1dcdafULL);
  EXPECT_EQ(HashKey(1), 0x910a2dec89025cc1ULL);
  EXPECT_EQ(HashKey(~uint64_t{0}), 0xe4d971771b652c20ULL);
}

}  // namespace
}  // namespace petrel
