#include "worker/data/caching_reader.h"

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "glog/logging.h"
#include "gtest/gtest.h"

#include "worker/testing/temp_file.h"

namespace petrel {
namespace {

// Collects the WARNING (and worse) lines logged while it lives.
class WarningCapture : public google::LogSink {
 public:
  WarningCapture() { google::AddLogSink(this); }
  ~WarningCapture() override { google::RemoveLogSink(this); }
  void send(google::LogSeverity severity, const char*, const char*, int,
            const google::LogMessageTime&, const char* message,
            size_t length) override {
    if (severity < google::GLOG_WARNING) return;
    absl::MutexLock lock(&mu_);
    text_.append(message, length).append("\n");
  }
  std::string text() {
    absl::MutexLock lock(&mu_);
    return text_;
  }

 private:
  absl::Mutex mu_;
  std::string text_;
};

std::string LibsvmLines(int begin, int end) {
  std::string text;
  for (int i = begin; i < end; ++i) {
    absl::StrAppend(&text, i % 3 ? "0" : "1", " ", i, ":1 ", 1000 + i,
                    i % 2 ? ":0.25" : ":1", "\n");
  }
  return text;
}

std::string CriteoLines(int count) {
  std::string text;
  for (int i = 0; i < count; ++i) {
    std::vector<std::string> fields(40);
    fields[0] = i % 3 ? "0" : "1";
    fields[1] = absl::StrCat(i);
    if (i % 4) fields[5] = absl::StrCat(i * 7);
    fields[14] = absl::StrCat("c", i % 5);
    fields[39] = "ff";
    absl::StrAppend(&text, absl::StrJoin(fields, "\t"), "\n");
  }
  return text;
}

ReaderOptions Options(const std::string& file, CacheMode mode,
                      int64_t budget = int64_t{1} << 30) {
  ReaderOptions options;
  options.files = {file};
  options.cache.mode = mode;
  options.cache.memory_budget_bytes = budget;
  return options;
}

std::unique_ptr<CachingReader> Open(const ReaderOptions& options) {
  absl::StatusOr<std::unique_ptr<Reader>> reader = OpenReader(options);
  EXPECT_TRUE(reader.ok()) << reader.status();
  if (!reader.ok()) return nullptr;
  return std::unique_ptr<CachingReader>(
      static_cast<CachingReader*>(reader->release()));
}

// One pass as text: every example's label, keys, values, fields, numeric.
std::string Pass(Reader* reader, int batch_size) {
  std::string out;
  Batch batch;
  while (true) {
    absl::StatusOr<bool> more = reader->Next(batch_size, &batch);
    EXPECT_TRUE(more.ok()) << more.status();
    if (!more.ok() || !*more) break;
    for (size_t i = 0; i < batch.size(); ++i) {
      absl::StrAppend(&out, batch.labels[i], "|");
      for (uint32_t j = batch.offsets[i]; j < batch.offsets[i + 1]; ++j) {
        absl::StrAppend(&out, batch.keys[j], ":", batch.values[j],
                        batch.fields.empty() ? "" : "@",
                        batch.fields.empty() ? 0 : batch.fields[j], " ");
      }
      for (int k = 0; k < batch.num_numeric; ++k) {
        absl::StrAppend(&out, batch.numeric[i * batch.num_numeric + k], ",");
      }
      out += "\n";
    }
  }
  return out;
}

// What the plain text reader returns for `options`.
std::string TextPass(ReaderOptions options, int batch_size = 7) {
  options.cache.mode = CacheMode::kOff;
  absl::StatusOr<std::unique_ptr<Reader>> reader = OpenReader(options);
  EXPECT_TRUE(reader.ok()) << reader.status();
  return Pass(reader->get(), batch_size);
}

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

TEST(CachingReaderTest, MemoryCacheServesLaterPasses) {
  const std::string file = WriteTempFile("in", LibsvmLines(0, 50));
  auto reader = Open(Options(file, CacheMode::kAuto));
  ASSERT_NE(reader, nullptr);
  const std::string expected = TextPass(Options(file, CacheMode::kAuto));
  EXPECT_EQ(reader->source(), CachingReader::Source::kText);
  EXPECT_EQ(Pass(reader.get(), 7), expected);
  for (int batch_size : {1, 4, 50, 1000}) {
    ASSERT_TRUE(reader->Rewind().ok());
    EXPECT_EQ(reader->source(), CachingReader::Source::kMemory);
    EXPECT_EQ(Pass(reader.get(), batch_size), expected);
  }
  EXPECT_EQ(reader->text_examples(), 50);
  EXPECT_FALSE(Exists(reader->cache_path()));  // it fit in memory
}

TEST(CachingReaderTest, FileCacheIsReusedByALaterRun) {
  const std::string file = WriteTempFile("in", LibsvmLines(0, 40));
  const std::string expected = TextPass(Options(file, CacheMode::kFile));
  std::string path;
  {
    auto first = Open(Options(file, CacheMode::kFile));
    ASSERT_NE(first, nullptr);
    path = first->cache_path();
    EXPECT_EQ(Pass(first.get(), 6), expected);
    ASSERT_TRUE(first->Rewind().ok());
    EXPECT_EQ(first->source(), CachingReader::Source::kFile);
    EXPECT_EQ(Pass(first.get(), 9), expected);
    EXPECT_EQ(first->text_examples(), 40);
  }
  ASSERT_TRUE(Exists(path));
  for (CacheMode mode : {CacheMode::kFile, CacheMode::kAuto}) {
    auto later = Open(Options(file, mode));
    ASSERT_NE(later, nullptr);
    EXPECT_EQ(later->cache_path(), path);
    EXPECT_NE(later->source(), CachingReader::Source::kText);
    EXPECT_EQ(Pass(later.get(), 5), expected);
    ASSERT_TRUE(later->Rewind().ok());
    EXPECT_EQ(Pass(later.get(), 11), expected);
    EXPECT_EQ(later->text_examples(), 0) << "a later run parsed text";
  }
  std::remove(path.c_str());
}

TEST(CachingReaderTest, OverTheMemoryBudgetGoesToAFile) {
  const std::string file = WriteTempFile("in", LibsvmLines(0, 60));
  const std::string expected = TextPass(Options(file, CacheMode::kAuto));
  auto reader = Open(Options(file, CacheMode::kAuto, /*budget=*/500));
  ASSERT_NE(reader, nullptr);
  EXPECT_EQ(Pass(reader.get(), 8), expected);
  ASSERT_TRUE(reader->Rewind().ok());
  EXPECT_EQ(reader->source(), CachingReader::Source::kFile);
  EXPECT_EQ(Pass(reader.get(), 8), expected);
  EXPECT_TRUE(Exists(reader->cache_path()));
  std::remove(reader->cache_path().c_str());

  // Memory only: over the budget every pass parses the text.
  auto memory = Open(Options(file, CacheMode::kMemory, /*budget=*/500));
  ASSERT_NE(memory, nullptr);
  EXPECT_EQ(Pass(memory.get(), 8), expected);
  ASSERT_TRUE(memory->Rewind().ok());
  EXPECT_EQ(memory->source(), CachingReader::Source::kText);
  EXPECT_EQ(Pass(memory.get(), 8), expected);
  EXPECT_EQ(memory->text_examples(), 120);
  EXPECT_FALSE(Exists(memory->cache_path()));
}

// Builds the file cache of `options` with one pass; returns its path.
std::string BuildFileCache(const ReaderOptions& options) {
  auto reader = Open(options);
  if (reader == nullptr) return "";
  Pass(reader.get(), 16);
  EXPECT_TRUE(Exists(reader->cache_path()));
  return reader->cache_path();
}

TEST(CachingReaderTest, RebuiltWhenTheInputChanges) {
  const std::string file = WriteTempFile("in", LibsvmLines(0, 30));
  const ReaderOptions options = Options(file, CacheMode::kFile);
  const std::string path = BuildFileCache(options);
  // Same size, other content (and a new mtime).
  std::ofstream(file, std::ios::binary | std::ios::trunc)
      << LibsvmLines(0, 29) << "1 9:1 1029:0.25\n";
  auto reader = Open(options);
  ASSERT_NE(reader, nullptr);
  EXPECT_EQ(reader->cache_path(), path);
  EXPECT_EQ(reader->source(), CachingReader::Source::kText);
  EXPECT_EQ(Pass(reader.get(), 16), TextPass(options));
  EXPECT_EQ(reader->text_examples(), 30);
  // Only the modification time changes: rebuilt too.
  reader.reset();
  struct timespec times[2] = {{0, UTIME_OMIT}, {12345, 0}};
  ASSERT_EQ(utimensat(AT_FDCWD, file.c_str(), times, 0), 0);
  reader = Open(options);
  EXPECT_EQ(reader->source(), CachingReader::Source::kText);
  std::remove(path.c_str());
}

TEST(CachingReaderTest, RebuiltWhenReaderSettingsChange) {
  const std::string file = WriteTempFile("in", CriteoLines(20));
  ReaderOptions options = Options(file, CacheMode::kFile);
  options.format = DataFormat::kCriteo;
  const std::string path = BuildFileCache(options);
  ReaderOptions fields = options;
  fields.with_fields = fields.with_numeric = true;
  ReaderOptions share = options;
  share.num_workers = 2;
  for (const ReaderOptions& other : {fields, share}) {
    auto reader = Open(other);
    ASSERT_NE(reader, nullptr);
    EXPECT_NE(reader->cache_path(), path);
    EXPECT_EQ(reader->source(), CachingReader::Source::kText);
    const std::string expected = TextPass(other);
    EXPECT_EQ(Pass(reader.get(), 3), expected);
    ASSERT_TRUE(reader->Rewind().ok());
    EXPECT_EQ(Pass(reader.get(), 4), expected);  // fields and numeric too
    std::remove(reader->cache_path().c_str());
  }
  EXPECT_EQ(Open(options)->source(), CachingReader::Source::kFile);
  std::remove(path.c_str());
}

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

TEST(CachingReaderTest, CorruptOrTruncatedCacheIsRebuiltWithALogLine) {
  const std::string file = WriteTempFile("in", LibsvmLines(0, 40));
  const ReaderOptions options = Options(file, CacheMode::kAuto, /*budget=*/0);
  const std::string path = BuildFileCache(options);
  const std::string good = ReadBytes(path);
  const std::string expected = TextPass(options);
  std::string flipped = good;
  flipped[good.size() - 5] ^= 0x10;  // a key or value in the last block
  std::string header = good;
  header[20] ^= 1;  // the example count
  for (const std::string& bad :
       {flipped, header, good.substr(0, good.size() - 3), good.substr(0, 30),
        good + "x"}) {
    WriteBytes(path, bad);
    WarningCapture log;
    auto reader = Open(options);
    ASSERT_NE(reader, nullptr);
    EXPECT_EQ(reader->source(), CachingReader::Source::kText);
    EXPECT_NE(log.text().find("rebuilding it from the text"), std::string::npos)
        << log.text();
    EXPECT_NE(log.text().find(path), std::string::npos) << log.text();
    EXPECT_EQ(Pass(reader.get(), 16), expected);
    EXPECT_EQ(ReadBytes(path), good);  // rebuilt
  }
  std::remove(path.c_str());
}

TEST(CachingReaderTest, UnwritableDirectoryFallsBackToText) {
  const std::string file = WriteTempFile("in", LibsvmLines(0, 20));
  ReaderOptions options = Options(file, CacheMode::kFile);
  options.cache.dir = "/nonexistent/petrel-cache";
  WarningCapture log;
  auto reader = Open(options);
  ASSERT_NE(reader, nullptr);
  const std::string expected = TextPass(options);
  EXPECT_EQ(Pass(reader.get(), 6), expected);
  EXPECT_NE(log.text().find("cannot write it"), std::string::npos)
      << log.text();
  ASSERT_TRUE(reader->Rewind().ok());
  EXPECT_EQ(reader->source(), CachingReader::Source::kText);
  EXPECT_EQ(Pass(reader.get(), 6), expected);
}

TEST(CachingReaderTest, MalformedLinesCountPerPassAsInText) {
  const std::string file = WriteTempFile(
      "in", LibsvmLines(0, 5) + "1 4:x\n" + LibsvmLines(6, 9) + "2 1:1\n");
  ReaderOptions options = Options(file, CacheMode::kAuto);
  options.skip_malformed = true;
  auto reader = Open(options);
  ASSERT_NE(reader, nullptr);
  Pass(reader.get(), 4);
  EXPECT_EQ(reader->malformed_lines(), 2);
  ASSERT_TRUE(reader->Rewind().ok());
  EXPECT_EQ(reader->source(), CachingReader::Source::kMemory);
  Pass(reader.get(), 4);
  EXPECT_EQ(reader->malformed_lines(), 4);
}

TEST(CachingReaderTest, APassRewoundEarlyKeepsNothing) {
  const std::string file = WriteTempFile("in", LibsvmLines(0, 30));
  auto reader = Open(Options(file, CacheMode::kAuto));
  ASSERT_NE(reader, nullptr);
  Batch batch;
  ASSERT_TRUE(*reader->Next(10, &batch));
  ASSERT_TRUE(reader->Rewind().ok());
  EXPECT_EQ(reader->source(), CachingReader::Source::kText);
  const std::string expected = TextPass(Options(file, CacheMode::kAuto));
  EXPECT_EQ(Pass(reader.get(), 7), expected);
  ASSERT_TRUE(reader->Rewind().ok());
  EXPECT_EQ(reader->source(), CachingReader::Source::kMemory);
  EXPECT_EQ(Pass(reader.get(), 7), expected);
}

TEST(CachingReaderTest, RejectsANegativeBudget) {
  const std::string file = WriteTempFile("in", LibsvmLines(0, 3));
  EXPECT_EQ(OpenReader(Options(file, CacheMode::kAuto, -1)).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace petrel
