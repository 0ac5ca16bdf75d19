#include "worker/data/cache_file.h"

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

#include "worker/data/internal/block_arena.h"
#include "worker/data/internal/cache_block.h"

namespace petrel {
namespace {

Batch TwoExamples() {
  Batch batch;
  batch.labels = {1, 0};
  batch.keys = {7, 8, 9};
  batch.values = {1, 0.5f, 1};
  batch.offsets = {0, 2, 3};
  batch.fields = {0, 3, 4};
  batch.num_numeric = 2;
  batch.numeric = {0.1f, 0.2f, 0.3f, 0.4f};
  return batch;
}

TEST(CacheBlockTest, RoundTripsAnyRangeOfExamples) {
  const Batch batch = TwoExamples();
  std::string bytes;
  internal::EncodeBlock(batch, &bytes);
  absl::StatusOr<internal::BlockView> view = internal::ParseBlock(bytes);
  ASSERT_TRUE(view.ok()) << view.status();
  Batch out;
  internal::AppendExamples(*view, 0, 1, &out);
  internal::AppendExamples(*view, 1, 2, &out);
  EXPECT_EQ(out.labels, batch.labels);
  EXPECT_EQ(out.keys, batch.keys);
  EXPECT_EQ(out.values, batch.values);
  EXPECT_EQ(out.offsets, batch.offsets);
  EXPECT_EQ(out.fields, batch.fields);
  EXPECT_EQ(out.numeric, batch.numeric);
  EXPECT_EQ(out.num_numeric, 2);
}

TEST(CacheBlockTest, LeavesOutValuesThatAreAllOne) {
  Batch batch;
  batch.labels = {1};
  batch.keys = {1, 2};
  batch.values = {1, 1};
  batch.offsets = {0, 2};
  std::string bytes;
  internal::EncodeBlock(batch, &bytes);
  // Labels and ends (8), keys as u32 (8), no values.
  EXPECT_EQ(bytes.size(), internal::kBlockHeaderBytes + 8 + 8);
  Batch out;
  internal::AppendExamples(*internal::ParseBlock(bytes), 0, 1, &out);
  EXPECT_EQ(out.values, batch.values);
}

TEST(CacheBlockTest, KeysAtOrAbove2To32KeepAllTheirBits) {
  Batch batch;
  batch.labels = {0, 1};
  batch.keys = {1, uint64_t{1} << 32, 0xFFFFFFFFu};
  batch.values = {1, 1, 2};
  batch.offsets = {0, 1, 3};
  std::string bytes;
  internal::EncodeBlock(batch, &bytes);
  Batch out;
  internal::AppendExamples(*internal::ParseBlock(bytes), 0, 2, &out);
  EXPECT_EQ(out.keys, batch.keys);
  batch.keys[1] = 7;  // now every key fits 32 bits
  bytes.clear();
  internal::EncodeBlock(batch, &bytes);
  out.Clear();
  internal::AppendExamples(*internal::ParseBlock(bytes), 1, 2, &out);
  EXPECT_EQ(out.keys, (std::vector<uint64_t>{7, 0xFFFFFFFFu}));
  EXPECT_EQ(out.values, (std::vector<float>{1, 2}));
}

TEST(CacheBlockTest, DetectsEveryFlippedByteAndTruncation) {
  std::string bytes;
  internal::EncodeBlock(TwoExamples(), &bytes);
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string bad = bytes;
    bad[i] ^= 0x40;
    EXPECT_EQ(internal::ParseBlock(bad).status().code(),
              absl::StatusCode::kDataLoss)
        << i;
  }
  EXPECT_FALSE(internal::ParseBlock(bytes.substr(0, bytes.size() - 1)).ok());
  EXPECT_FALSE(internal::ParseBlock(bytes.substr(0, 10)).ok());
}

TEST(BlockArenaTest, KeepsEveryCopyInPlace) {
  internal::BlockArena arena(/*chunk_bytes=*/1 << 16);
  std::vector<absl::string_view> views;
  std::vector<std::string> blocks;
  for (int i = 0; i < 200; ++i) {
    blocks.push_back(std::string(100 + i * 997 % 3000, 'a' + i % 26));
    absl::StatusOr<absl::string_view> view = arena.Append(blocks.back());
    ASSERT_TRUE(view.ok()) << view.status();
    views.push_back(*view);
  }
  // A block bigger than a chunk gets its own.
  const std::string big(100000, 'z');
  ASSERT_EQ(*arena.Append(big), big);
  for (size_t i = 0; i < blocks.size(); ++i) EXPECT_EQ(views[i], blocks[i]);
  arena.Clear();
  EXPECT_EQ(*arena.Append("x"), "x");
}

std::string TempPath(const std::string& name) {
  return absl::StrCat(::testing::TempDir(), "cache_file_test.", getpid(), ".",
                      name);
}

TEST(CacheFileTest, WritesAndReadsBlocks) {
  const std::string path = TempPath("ok");
  std::string block;
  internal::EncodeBlock(TwoExamples(), &block);
  {
    auto writer = CacheFileWriter::Create(path, "key");
    ASSERT_TRUE(writer.ok()) << writer.status();
    ASSERT_TRUE((*writer)->Append(block, 2).ok());
    ASSERT_TRUE((*writer)->Append(block, 2).ok());
    ASSERT_TRUE((*writer)->Finish(/*malformed_lines=*/3).ok());
  }
  auto reader = CacheFileReader::Open(path, "key");
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ((*reader)->examples(), 4u);
  EXPECT_EQ((*reader)->blocks(), 2u);
  EXPECT_EQ((*reader)->malformed_lines(), 3u);
  std::string buffer;
  internal::BlockView view;
  for (int pass = 0; pass < 2; ++pass) {
    EXPECT_TRUE(*(*reader)->NextBlock(&buffer, &view));
    EXPECT_TRUE(*(*reader)->NextBlock(&buffer, &view));
    EXPECT_EQ(view.examples, 2u);
    EXPECT_FALSE(*(*reader)->NextBlock(&buffer, &view));
    (*reader)->Rewind();
  }
  EXPECT_EQ(CacheFileReader::Open(path, "other").status().code(),
            absl::StatusCode::kFailedPrecondition);
  std::remove(path.c_str());
  EXPECT_EQ(CacheFileReader::Open(path, "key").status().code(),
            absl::StatusCode::kNotFound);
}

TEST(CacheFileTest, AnUnfinishedFileLeavesNothingBehind) {
  const std::string path = TempPath("unfinished");
  {
    auto writer = CacheFileWriter::Create(path, "key");
    ASSERT_TRUE(writer.ok()) << writer.status();
  }
  EXPECT_EQ(CacheFileReader::Open(path, "key").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(CacheFileWriter::Create("/nonexistent/dir/x", "k").status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace petrel
