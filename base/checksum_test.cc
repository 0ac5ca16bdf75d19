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

TEST(ChecksumTest, StreamInPiecesEqualsOneShot) {
  std::string text;
  for (int i = 0; i < 300; ++i) text.push_back(static_cast<char>(i * 37 + 11));
  for (size_t size : {size_t{0}, size_t{5}, size_t{31}, size_t{32}, size_t{33},
                      size_t{100}, size_t{300}}) {
    const std::string bytes = text.substr(0, size);
    for (size_t piece : {size_t{1}, size_t{3}, size_t{8}, size_t{31},
                         size_t{32}, size_t{64}, size_t{1000}}) {
      Checksum64Stream stream(7);
      for (size_t i = 0; i < bytes.size(); i += piece) {
        const std::string part = bytes.substr(i, piece);
        stream.Update(part.data(), part.size());
      }
      EXPECT_EQ(stream.Digest(), Checksum64(bytes, 7))
          << "size " << size << " piece " << piece;
    }
  }
  Checksum64Stream empty;
  EXPECT_EQ(empty.Digest(), 0xEF46DB3751D8E999ULL);
}

}  // namespace
}  // namespace petrel
