#include "base/checksum.h"

#include <string>

#include "gtest/gtest.h"

namespace petrel {
namespace {

// Reference values of XXH64 (xxhash's own test vectors and `xxhsum -H64`).
TEST(ChecksumTest, MatchesXxh64) {
  EXPECT_EQ(Checksum64(""), 0xEF46DB3751D8E999ULL);
  EXPECT_EQ(Checksum64("a"), 0xD24EC4F1A98C6E5BULL);
  EXPECT_EQ(Checksum64("abc"), 0x44BC2CF5AD770999ULL);
}

TEST(ChecksumTest, EveryByteAndLengthCounts) {
  std::string text(100, 'x');
  const uint64_t base = Checksum64(text);
  for (size_t i = 0; i < text.size(); ++i) {
    std::string changed = text;
    changed[i] ^= 1;
    EXPECT_NE(Checksum64(changed), base) << i;
  }
  EXPECT_NE(Checksum64(text.substr(0, 99)), base);
  EXPECT_NE(Checksum64(text, 1), base);
}

}  // namespace
}  // namespace petrel
