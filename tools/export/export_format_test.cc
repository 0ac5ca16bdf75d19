// The test vectors of docs/export-format.md, computed with the real code, so
// that the page a Python or Java featurizer is written from stays true.
#include <cstdint>

#include "gtest/gtest.h"

#include "cluster/key_range_map.h"
#include "worker/data/feature_hash.h"
#include "worker/model/model.h"

namespace petrel {
namespace {

TEST(ExportFormatTest, FeatureHashVectors) {
  EXPECT_EQ(HashFeature(13, ""), 0xf93e206c07b111ccULL);
  EXPECT_EQ(HashFeature(13, "a"), 0x330841be5a4616b4ULL);
  EXPECT_EQ(HashFeature(13, "68fd1e64"), 0x90c09aed0b218467ULL);
  EXPECT_EQ(HashFeature(14, "05db9164"), 0x9c4107e7fdba90f1ULL);
  EXPECT_EQ(HashFeature(38, "0123456789abcdef0"), 0x481947a868ce57bfULL);
  EXPECT_EQ(Mix64(1), 0xb456bcfc34c2cb2cULL);
}

TEST(ExportFormatTest, CriteoIntegerKeyVectors) {
  EXPECT_EQ(CriteoIntegerKey(0, -1), 0x3214908bab1ad411ULL);
  EXPECT_EQ(CriteoIntegerKey(0, -1), HashFeature(0, "SP-1"));
  EXPECT_EQ(CriteoIntegerKey(0, 0), 0xf7bf21a76f17d0daULL);
  EXPECT_EQ(CriteoIntegerKey(0, 2), 0x5dcbad17ca259530ULL);
  EXPECT_EQ(CriteoIntegerKey(0, 2), HashFeature(0, "SP2"));
  EXPECT_EQ(CriteoIntegerKey(0, 3), 0xeeb25b789575a1ecULL);
  EXPECT_EQ(CriteoIntegerKey(0, 3), HashFeature(0, "1"));
  EXPECT_EQ(CriteoIntegerBucket(100), 21);
  EXPECT_EQ(CriteoIntegerKey(5, 100), 0xe176084b6202f7daULL);
  EXPECT_EQ(CriteoIntegerBucket(1000000), 190);
  EXPECT_EQ(CriteoIntegerKey(12, 1000000), 0xeaebd49c288cce1bULL);
}

TEST(ExportFormatTest, KeyRangeVectors) {
  EXPECT_EQ(kBiasKey, ~uint64_t{0});
  const uint64_t keys[] = {0, 1, 12345, kBiasKey};
  const uint64_t hashes[] = {0xe220a8397b1dcdafULL, 0x910a2dec89025cc1ULL,
                             0x22118258a9d111a0ULL, 0xe4d971771b652c20ULL};
  const int owners3[] = {2, 1, 0, 2};
  const int owners2x4[] = {1, 0, 1, 1};
  auto three = KeyRangeMap::Uniform(3, 1);
  auto two_by_four = KeyRangeMap::Uniform(2, 4);
  ASSERT_TRUE(three.ok() && two_by_four.ok());
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(HashKey(keys[i]), hashes[i]) << i;
    EXPECT_EQ(three->OwnerOf(keys[i]), owners3[i]) << i;
    EXPECT_EQ(two_by_four->OwnerOf(keys[i]), owners2x4[i]) << i;
  }
  EXPECT_EQ(three->begins(), (std::vector<uint64_t>{0, 0x5555555555555556ULL,
                                                    0xaaaaaaaaaaaaaaabULL}));
}

}  // namespace
}  // namespace petrel
