#include "worker/data/sharded_line_reader.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

#include "worker/testing/temp_file.h"

namespace petrel {
namespace {

struct Line {
  std::string file;
  int64_t number;
  std::string text;
  bool operator==(const Line& o) const {
    return file == o.file && number == o.number && text == o.text;
  }
};

// Every line of a share, with its file and line number.
std::vector<Line> ReadShare(const std::vector<std::string>& files, int rank,
                            int workers, size_t buffer_bytes) {
  auto reader = ShardedLineReader::Open(files, rank, workers, buffer_bytes);
  EXPECT_TRUE(reader.ok()) << reader.status();
  std::vector<Line> lines;
  absl::string_view text;
  while (true) {
    absl::StatusOr<bool> more = (*reader)->NextLine(&text);
    EXPECT_TRUE(more.ok()) << more.status();
    if (!more.ok() || !*more) break;
    absl::StatusOr<int64_t> number = (*reader)->line_number();
    EXPECT_TRUE(number.ok()) << number.status();
    lines.push_back(
        {(*reader)->file(), number.value_or(-1), std::string(text)});
  }
  return lines;
}

// The lines of `files` read naively: split at '\n', no empty last line.
std::vector<Line> AllLines(const std::vector<std::string>& files,
                           const std::vector<std::string>& contents) {
  std::vector<Line> lines;
  for (size_t f = 0; f < files.size(); ++f) {
    std::vector<std::string> parts = absl::StrSplit(contents[f], '\n');
    if (!parts.empty() && parts.back().empty()) parts.pop_back();
    for (size_t i = 0; i < parts.size(); ++i) {
      lines.push_back({files[f], static_cast<int64_t>(i + 1), parts[i]});
    }
  }
  return lines;
}

TEST(ShardedLineReaderTest, EveryLineIsReadOnceByOneWorker) {
  const std::vector<std::string> contents = {
      "a\nbb\nccc\n\ndddd\n",  // trailing newline, a blank line
      "",                      // empty file
      "x\nyy\n" + std::string(100, 'L') + "\nzz",  // long line, no final \n
      "\n\n\nq\n", "single"};
  std::vector<std::string> files;
  for (size_t i = 0; i < contents.size(); ++i) {
    files.push_back(WriteTempFile(absl::StrCat("f", i), contents[i]));
  }
  const std::vector<Line> expected = AllLines(files, contents);
  for (size_t buffer : {16, 37, 1 << 20}) {
    for (int workers = 1; workers <= 200; workers += workers < 20 ? 1 : 30) {
      std::vector<Line> got;
      for (int rank = 0; rank < workers; ++rank) {
        std::vector<Line> share = ReadShare(files, rank, workers, buffer);
        got.insert(got.end(), share.begin(), share.end());
      }
      ASSERT_EQ(got.size(), expected.size())
          << "workers=" << workers << " buffer=" << buffer;
      for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(got[i], expected[i])
            << "line " << i << " workers=" << workers << " buffer=" << buffer;
      }
    }
  }
}

TEST(ShardedLineReaderTest, StripsCarriageReturns) {
  const std::string file = WriteTempFile("crlf", "a\r\nb\r\n\r\nc");
  std::vector<Line> lines = ReadShare({file}, 0, 1, 1 << 20);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0].text, "a");
  EXPECT_EQ(lines[1].text, "b");
  EXPECT_EQ(lines[2].text, "");
  EXPECT_EQ(lines[3].text, "c");
}

TEST(ShardedLineReaderTest, SharesSplitTheBytesEvenly) {
  const std::string file = WriteTempFile("even", std::string(100, '\n'));
  auto reader = ShardedLineReader::Open({file, file}, 1, 3, 64);
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ((*reader)->share_begin(), 66u);
  EXPECT_EQ((*reader)->share_end(), 133u);
}

TEST(ShardedLineReaderTest, RewindStartsTheShareAgain) {
  const std::string file = WriteTempFile("r", "1\n2\n3\n4\n5\n6\n");
  auto reader = ShardedLineReader::Open({file}, 1, 2, 16);
  ASSERT_TRUE(reader.ok());
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<std::string> lines;
    std::vector<int64_t> numbers;
    absl::string_view text;
    while ((*reader)->NextLine(&text).value_or(false)) {
      lines.emplace_back(text);
      numbers.push_back((*reader)->line_number().value_or(-1));
    }
    EXPECT_EQ(lines, (std::vector<std::string>{"4", "5", "6"}));
    EXPECT_EQ(numbers, (std::vector<int64_t>{4, 5, 6}));
    (*reader)->Rewind();
  }
}

TEST(ShardedLineReaderTest, TruncatedFileIsDataLoss) {
  const std::string file = WriteTempFile("t", std::string(1000, 'x') + "\n");
  auto reader = ShardedLineReader::Open({file}, 0, 1, 64);
  ASSERT_TRUE(reader.ok());
  ASSERT_EQ(truncate(file.c_str(), 500), 0);
  absl::string_view text;
  absl::StatusOr<bool> more = (*reader)->NextLine(&text);
  EXPECT_EQ(more.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(more.status().message().find("truncated"), std::string::npos);
}

TEST(ShardedLineReaderTest, RejectsBadArguments) {
  const std::string file = WriteTempFile("ok", "1\n");
  EXPECT_EQ(ShardedLineReader::Open({}, 0, 1, 64).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ShardedLineReader::Open({file}, 2, 2, 64).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ShardedLineReader::Open({file}, -1, 2, 64).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ShardedLineReader::Open({file}, 0, 1, 8).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      ShardedLineReader::Open({::testing::TempDir()}, 0, 1, 64).status().code(),
      absl::StatusCode::kInvalidArgument);
  absl::Status missing =
      ShardedLineReader::Open({file, file + ".missing"}, 0, 1, 64).status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(missing.message().find(".missing"), std::string::npos);
}

}  // namespace
}  // namespace petrel
