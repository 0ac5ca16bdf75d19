#include "worker/data/resume_position.h"

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"

#include "worker/data/cache_key.h"
#include "worker/testing/temp_file.h"

namespace petrel {
namespace {

// Lines of `format` for examples begin..end-1, with a blank line, a CRLF
// line and (when `last_without_newline`) no '\n' after the last line.
std::string Lines(DataFormat format, int begin, int end,
                  bool last_without_newline) {
  std::string text;
  for (int i = begin; i < end; ++i) {
    const char* label = i % 2 ? "1" : "0";
    if (format == DataFormat::kLibsvm) {
      absl::StrAppend(&text, label, " ", i, ":1 ", 1000 + i, ":0.5");
    } else {
      std::vector<std::string> fields = {label, absl::StrCat(i % 7)};
      fields.resize(14);  // I2..I13 missing
      for (int c = 0; c < 26; ++c) fields.push_back(absl::StrCat("c", i, c));
      absl::StrAppend(&text, absl::StrJoin(fields, "\t"));
    }
    if (i % 5 == 3) absl::StrAppend(&text, "\r");
    if (i + 1 < end || !last_without_newline) absl::StrAppend(&text, "\n");
    if (i % 9 == 4) absl::StrAppend(&text, "\n");  // a blank line
  }
  return text;
}

std::string Example(const Batch& batch, size_t i) {
  std::vector<uint64_t> keys(batch.keys.begin() + batch.offsets[i],
                             batch.keys.begin() + batch.offsets[i + 1]);
  return absl::StrCat(batch.labels[i], ":", absl::StrJoin(keys, ","));
}

std::unique_ptr<Reader> Open(const ReaderOptions& options) {
  absl::StatusOr<std::unique_ptr<Reader>> reader = OpenReader(options);
  EXPECT_TRUE(reader.ok()) << reader.status();
  return reader.ok() ? std::move(*reader) : nullptr;
}

// The rest of the reader's pass, one example at a time; with `offsets`,
// next_offset() before the first and after each example too.
std::vector<std::string> Rest(Reader* reader,
                              std::vector<int64_t>* offsets = nullptr) {
  std::vector<std::string> out;
  Batch batch;
  if (offsets != nullptr) offsets->push_back(reader->next_offset());
  while (true) {
    absl::StatusOr<bool> more = reader->Next(1, &batch);
    EXPECT_TRUE(more.ok()) << more.status();
    if (!more.ok() || !*more) break;
    out.push_back(Example(batch, 0));
    if (offsets != nullptr) offsets->push_back(reader->next_offset());
  }
  return out;
}

// format, workers, cache mode.
class ResumePositionTest
    : public ::testing::TestWithParam<std::tuple<DataFormat, int, CacheMode>> {
 protected:
  ReaderOptions Options(int rank) {
    const DataFormat format = std::get<0>(GetParam());
    ReaderOptions options;
    options.format = format;
    // Three files (one empty) so that shares begin mid-file and lines
    // continue across a file boundary.
    options.files = {WriteTempFile("a", Lines(format, 0, 23, false)),
                     WriteTempFile("empty", ""),
                     WriteTempFile("b", Lines(format, 23, 40, true))};
    options.worker_rank = rank;
    options.num_workers = std::get<1>(GetParam());
    options.read_buffer_bytes = 64;  // exercise refills and growth
    options.cache.mode = std::get<2>(GetParam());
    return options;
  }
};

TEST_P(ResumePositionTest, SeekingToAnOffsetGivesTheSameExamplesAsSkipping) {
  int total = 0;
  for (int rank = 0; rank < std::get<1>(GetParam()); ++rank) {
    const ReaderOptions options = Options(rank);
    std::vector<int64_t> offsets;
    std::unique_ptr<Reader> reference = Open(options);
    ASSERT_NE(reference, nullptr);
    const std::vector<std::string> all = Rest(reference.get(), &offsets);
    total += static_cast<int>(all.size());
    ASSERT_EQ(offsets.size(), all.size() + 1);
    for (size_t k = 0; k <= all.size(); ++k) {
      SCOPED_TRACE(absl::StrCat("rank ", rank, " after ", k, " examples"));
      const std::vector<std::string> expected(all.begin() + k, all.end());
      // By skipping k examples.
      std::unique_ptr<Reader> skipped = Open(options);
      Batch batch;
      if (k > 0) {
        ASSERT_TRUE(skipped->Next(static_cast<int>(k), &batch).ok());
      }
      EXPECT_EQ(skipped->next_offset(), offsets[k]);
      EXPECT_EQ(Rest(skipped.get()), expected);
      // By seeking to the offset recorded after k examples.
      std::unique_ptr<Reader> seeked = Open(options);
      ASSERT_TRUE(seeked->SeekToOffset(offsets[k]).ok());
      // (After the last example it may say the share's end instead.)
      if (k < all.size()) {
        EXPECT_EQ(seeked->next_offset(), offsets[k]);
      }
      EXPECT_EQ(Rest(seeked.get()), expected);
      // The next pass is the whole share again.
      ASSERT_TRUE(seeked->Rewind().ok());
      EXPECT_EQ(Rest(seeked.get()), all);
      ASSERT_TRUE(seeked->Rewind().ok());
      EXPECT_EQ(Rest(seeked.get()), all);
    }
  }
  EXPECT_EQ(total, 40);
}

INSTANTIATE_TEST_SUITE_P(
    FormatsWorkersCache, ResumePositionTest,
    ::testing::Combine(::testing::Values(DataFormat::kLibsvm,
                                         DataFormat::kCriteo),
                       ::testing::Values(2, 3),
                       ::testing::Values(CacheMode::kOff, CacheMode::kMemory)));

ReaderOptions OneFile(const std::string& text, int rank, int workers) {
  ReaderOptions options;
  options.files = {WriteTempFile("data", text)};
  options.worker_rank = rank;
  options.num_workers = workers;
  return options;
}

pb::WorkerPosition PositionAfter(Reader* reader, int examples,
                                 uint64_t fingerprint) {
  Batch batch;
  EXPECT_TRUE(reader->Next(examples, &batch).ok());
  pb::WorkerPosition p;
  p.set_examples_in_epoch(examples);
  p.set_byte_offset(reader->next_offset());
  p.set_input_fingerprint(fingerprint);
  return p;
}

TEST(SeekToPositionTest, SeeksWhenTheInputIsTheSame) {
  const ReaderOptions options =
      OneFile(Lines(DataFormat::kLibsvm, 0, 30, false), 1, 2);
  const uint64_t fingerprint = InputFingerprint(options).value();
  std::unique_ptr<Reader> first = Open(options);
  const pb::WorkerPosition p = PositionAfter(first.get(), 4, fingerprint);
  const std::vector<std::string> expected = Rest(first.get());
  std::unique_ptr<Reader> resumed = Open(options);
  std::string why_not;
  ASSERT_TRUE(SeekToPosition(p, fingerprint, resumed.get(), &why_not))
      << why_not;
  EXPECT_EQ(Rest(resumed.get()), expected);
}

TEST(SeekToPositionTest, FallsBackWhenTheFileChanged) {
  ReaderOptions options =
      OneFile(Lines(DataFormat::kLibsvm, 0, 30, false), 0, 2);
  const uint64_t fingerprint = InputFingerprint(options).value();
  std::unique_ptr<Reader> first = Open(options);
  const pb::WorkerPosition p = PositionAfter(first.get(), 5, fingerprint);
  // A line more at the front: the offset would point elsewhere.
  std::ofstream(options.files[0]) << "1 77:1\n"
                                  << Lines(DataFormat::kLibsvm, 0, 30, false);
  const absl::StatusOr<uint64_t> changed = InputFingerprint(options);
  ASSERT_TRUE(changed.ok());
  EXPECT_NE(*changed, fingerprint);
  std::unique_ptr<Reader> resumed = Open(options);
  std::string why_not;
  EXPECT_FALSE(SeekToPosition(p, *changed, resumed.get(), &why_not));
  EXPECT_NE(why_not.find("differ"), std::string::npos) << why_not;
  // The reader was left at the start of its share.
  EXPECT_EQ(Rest(resumed.get()).front(), "1:77");
}

TEST(SeekToPositionTest, FallsBackWithoutAnOffset) {
  const ReaderOptions options =
      OneFile(Lines(DataFormat::kLibsvm, 0, 10, false), 0, 1);
  pb::WorkerPosition p;
  p.set_examples_in_epoch(3);
  p.set_byte_offset(-1);
  std::unique_ptr<Reader> reader = Open(options);
  std::string why_not;
  EXPECT_FALSE(SeekToPosition(p, InputFingerprint(options).value(),
                              reader.get(), &why_not));
  EXPECT_NE(why_not.find("no byte offset"), std::string::npos) << why_not;
}

TEST(SeekToPositionTest, FallsBackWhenThePassComesFromTheCache) {
  ReaderOptions options =
      OneFile(Lines(DataFormat::kLibsvm, 0, 20, false), 0, 1);
  options.cache.mode = CacheMode::kFile;
  options.cache.dir = ::testing::TempDir();
  const uint64_t fingerprint = InputFingerprint(options).value();
  pb::WorkerPosition p;
  {
    // Builds the cache file.
    std::unique_ptr<Reader> first = Open(options);
    p = PositionAfter(first.get(), 6, fingerprint);
    Rest(first.get());
    ASSERT_TRUE(first->Rewind().ok());
    EXPECT_EQ(first->next_offset(), -1);
  }
  std::unique_ptr<Reader> resumed = Open(options);  // from the cache file
  std::string why_not;
  EXPECT_FALSE(SeekToPosition(p, fingerprint, resumed.get(), &why_not));
  EXPECT_NE(why_not.find("cache"), std::string::npos) << why_not;
  std::remove(MakeCacheKey(options).value().path.c_str());
}

TEST(SeekToPositionTest, RefusesAnOffsetNotAtALineStart) {
  const ReaderOptions options = OneFile("1 1:1\n0 2:1\n1 3:1\n", 0, 1);
  std::unique_ptr<Reader> reader = Open(options);
  EXPECT_TRUE(absl::IsInvalidArgument(reader->SeekToOffset(7)));
  EXPECT_TRUE(absl::IsInvalidArgument(reader->SeekToOffset(-2)));
  EXPECT_TRUE(reader->SeekToOffset(6).ok());
  EXPECT_EQ(Rest(reader.get()), (std::vector<std::string>{"0:2", "1:3"}));
  // Past the end: nothing left.
  EXPECT_TRUE(reader->SeekToOffset(1000).ok());
  EXPECT_TRUE(Rest(reader.get()).empty());
}

}  // namespace
}  // namespace petrel
