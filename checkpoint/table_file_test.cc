#include "checkpoint/table_file.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "base/checksum.h"

namespace petrel {
namespace {

using ::testing::HasSubstr;

// Directories made by TempDir, removed when the tests end.
std::vector<std::string>& TempDirs() {
  static auto* dirs = new std::vector<std::string>();
  return *dirs;
}

class RemoveTempDirs : public ::testing::Environment {
 public:
  void TearDown() override {
    for (const std::string& dir : TempDirs()) {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  }
};
const auto* const kRemoveTempDirs =
    ::testing::AddGlobalTestEnvironment(new RemoveTempDirs);

std::string TempDir() {
  std::string pattern = ::testing::TempDir() + "table_file_test.XXXXXX";
  char* made = ::mkdtemp(pattern.data());
  EXPECT_NE(made, nullptr);
  TempDirs().push_back(pattern);
  return pattern;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void WriteAll(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

TableFileInfo Info() {
  TableFileInfo info;
  info.table_id = 3;
  info.dim = 2;
  info.stride = 5;
  info.optimizer = pb::OptimizerProto::KIND_ADAGRAD;
  return info;
}

// Writes `n` rows: key i * 7 + 1, floats key + j / 8.
absl::StatusOr<pb::CheckpointFile> WriteRows(const std::string& path,
                                             const TableFileInfo& info,
                                             uint64_t n) {
  auto writer = TableFileWriter::Create(path, info);
  if (!writer.ok()) return writer.status();
  std::vector<float> row(info.stride);
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t key = i * 7 + 1;
    for (int j = 0; j < info.stride; ++j) row[j] = key + j / 8.0f;
    absl::Status s = (*writer)->Append(key, row.data());
    if (!s.ok()) return s;
  }
  return (*writer)->Finish();
}

struct Rows {
  TableFileInfo info;
  std::vector<uint64_t> keys;
  std::vector<float> values;
  int chunks = 0;
};

absl::StatusOr<Rows> ReadRows(const std::string& path,
                              const pb::CheckpointFile& expected) {
  Rows rows;
  absl::Status s = ReadTableFile(
      path, expected,
      [&](const TableFileInfo& info, absl::Span<const uint64_t> keys,
          absl::Span<const float> values) {
        rows.info = info;
        rows.keys.insert(rows.keys.end(), keys.begin(), keys.end());
        rows.values.insert(rows.values.end(), values.begin(), values.end());
        ++rows.chunks;
        return absl::OkStatus();
      });
  if (!s.ok()) return s;
  return rows;
}

TEST(TableFileTest, RoundTrip) {
  const std::string path = TempDir() + "/t.bin";
  // Enough rows for several 4 MiB chunks.
  const uint64_t n = 300000;
  auto file = WriteRows(path, Info(), n);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->name(), "t.bin");
  EXPECT_EQ(file->table_id(), 3);
  EXPECT_EQ(file->rows(), n);
  EXPECT_EQ(file->bytes(), 64 + n * (8 + 4 * 5) + 16);
  const std::string bytes = ReadAll(path);
  EXPECT_EQ(bytes.size(), file->bytes());
  EXPECT_EQ(file->xxh64(), Checksum64(bytes));
  EXPECT_FALSE(Exists(path + ".tmp"));

  auto rows = ReadRows(path, *file);
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_GT(rows->chunks, 1);
  EXPECT_EQ(rows->info.table_id, 3);
  EXPECT_EQ(rows->info.dim, 2);
  EXPECT_EQ(rows->info.stride, 5);
  EXPECT_EQ(rows->info.optimizer, pb::OptimizerProto::KIND_ADAGRAD);
  ASSERT_EQ(rows->keys.size(), n);
  ASSERT_EQ(rows->values.size(), n * 5);
  for (uint64_t i = 0; i < n; ++i) {
    ASSERT_EQ(rows->keys[i], i * 7 + 1);
    for (int j = 0; j < 5; ++j) {
      ASSERT_EQ(rows->values[i * 5 + j], rows->keys[i] + j / 8.0f);
    }
  }
}

TEST(TableFileTest, HeaderIsLittleEndianAtDocumentedOffsets) {
  const std::string path = TempDir() + "/t.bin";
  auto file = WriteRows(path, Info(), 2);
  ASSERT_TRUE(file.ok()) << file.status();
  const std::string b = ReadAll(path);
  auto u32 = [&](size_t at) {
    uint32_t v = 0;
    for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(b[at + i]);
    return v;
  };
  EXPECT_EQ(b.substr(0, 8), "PTRLTBL1");
  EXPECT_EQ(u32(8), 1u);   // version
  EXPECT_EQ(u32(12), 3u);  // table id
  EXPECT_EQ(u32(16), 2u);  // dim
  EXPECT_EQ(u32(20), 5u);  // stride
  EXPECT_EQ(u32(24), static_cast<uint32_t>(pb::OptimizerProto::KIND_ADAGRAD));
  EXPECT_EQ(u32(28), 64u);  // header bytes
  EXPECT_EQ(u32(64), 1u);   // first key, low word
  EXPECT_EQ(u32(68), 0u);
  EXPECT_EQ(b.substr(b.size() - 8), "PTRLEND1");
  EXPECT_EQ(u32(b.size() - 16), 2u);  // row count
}

TEST(TableFileTest, EmptyTable) {
  const std::string path = TempDir() + "/t.bin";
  auto file = WriteRows(path, Info(), 0);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->bytes(), 80u);
  auto rows = ReadRows(path, *file);
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_TRUE(rows->keys.empty());
}

TEST(TableFileTest, TruncatedFileIsDataLoss) {
  const std::string path = TempDir() + "/t.bin";
  auto file = WriteRows(path, Info(), 100);
  ASSERT_TRUE(file.ok()) << file.status();
  std::string bytes = ReadAll(path);
  WriteAll(path, bytes.substr(0, bytes.size() - 1));
  auto rows = ReadRows(path, *file);
  EXPECT_EQ(rows.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(rows.status().message(), HasSubstr(path));
}

TEST(TableFileTest, EveryCorruptedByteIsDataLossBeforeAnyRow) {
  const std::string path = TempDir() + "/t.bin";
  auto file = WriteRows(path, Info(), 3);
  ASSERT_TRUE(file.ok()) << file.status();
  const std::string bytes = ReadAll(path);
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string corrupted = bytes;
    corrupted[i] ^= 0x10;
    WriteAll(path, corrupted);
    int calls = 0;
    absl::Status s =
        ReadTableFile(path, *file,
                      [&](const TableFileInfo&, absl::Span<const uint64_t>,
                          absl::Span<const float>) {
                        ++calls;
                        return absl::OkStatus();
                      });
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << "byte " << i;
    EXPECT_THAT(s.message(), HasSubstr("checksum")) << "byte " << i;
    EXPECT_EQ(calls, 0) << "byte " << i;
  }
}

TEST(TableFileTest, LayoutMismatchWithTheManifestIsDataLoss) {
  const std::string path = TempDir() + "/t.bin";
  auto file = WriteRows(path, Info(), 3);
  ASSERT_TRUE(file.ok()) << file.status();
  pb::CheckpointFile wrong_table = *file;
  wrong_table.set_table_id(4);
  EXPECT_EQ(ReadRows(path, wrong_table).status().code(),
            absl::StatusCode::kDataLoss);
  pb::CheckpointFile wrong_rows = *file;
  wrong_rows.set_rows(2);
  EXPECT_EQ(ReadRows(path, wrong_rows).status().code(),
            absl::StatusCode::kDataLoss);
}

TEST(TableFileTest, MissingFileIsNotFound) {
  const std::string path = TempDir() + "/none.bin";
  auto rows = ReadRows(path, pb::CheckpointFile());
  EXPECT_EQ(rows.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(rows.status().message(), HasSubstr(path));
}

TEST(TableFileTest, AppendRowsWritesWhatAppendWrites) {
  const std::string dir = TempDir();
  const uint64_t n = 300000;  // several buffers
  auto one_by_one = WriteRows(dir + "/a.bin", Info(), n);
  ASSERT_TRUE(one_by_one.ok()) << one_by_one.status();
  std::vector<uint64_t> keys(n);
  std::vector<float> values(n * 5);
  for (uint64_t i = 0; i < n; ++i) {
    keys[i] = i * 7 + 1;
    for (int j = 0; j < 5; ++j) values[i * 5 + j] = keys[i] + j / 8.0f;
  }
  auto writer = TableFileWriter::Create(dir + "/b.bin", Info());
  ASSERT_TRUE(writer.ok()) << writer.status();
  // Blocks of uneven sizes, one larger than a buffer.
  for (uint64_t done = 0, block = 1; done < n; block = block * 3 + 1) {
    const uint64_t take = std::min(block, n - done);
    ASSERT_TRUE(
        (*writer)
            ->AppendRows(keys.data() + done, values.data() + done * 5, take)
            .ok());
    done += take;
  }
  auto blocks = (*writer)->Finish();
  ASSERT_TRUE(blocks.ok()) << blocks.status();
  EXPECT_EQ(blocks->xxh64(), one_by_one->xxh64());
  EXPECT_EQ(ReadAll(dir + "/b.bin"), ReadAll(dir + "/a.bin"));
}

TEST(TableFileTest, CallbackErrorStopsTheRead) {
  const std::string path = TempDir() + "/t.bin";
  auto file = WriteRows(path, Info(), 300000);
  ASSERT_TRUE(file.ok()) << file.status();
  int calls = 0;
  absl::Status s =
      ReadTableFile(path, *file,
                    [&](const TableFileInfo&, absl::Span<const uint64_t>,
                        absl::Span<const float>) {
                      ++calls;
                      return absl::CancelledError("enough");
                    });
  EXPECT_EQ(s, absl::CancelledError("enough"));
  EXPECT_EQ(calls, 1);
}

TEST(TableFileTest, CannotCreateNamesThePath) {
  const std::string dir = TempDir();
  WriteAll(dir + "/plain", "x");
  // A path under a regular file: ENOTDIR even for root.
  const std::string path = dir + "/plain/t.bin";
  auto writer = TableFileWriter::Create(path, Info());
  EXPECT_EQ(writer.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(writer.status().message(), HasSubstr(path + ".tmp"));
  EXPECT_THAT(writer.status().message(), HasSubstr("Not a directory"));
}

TEST(TableFileTest, BadInfoIsInvalidArgument) {
  TableFileInfo info = Info();
  info.stride = 1;
  EXPECT_EQ(TableFileWriter::Create(TempDir() + "/t.bin", info).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(TableFileTest, UnfinishedWriterLeavesNothing) {
  const std::string path = TempDir() + "/t.bin";
  {
    auto writer = TableFileWriter::Create(path, Info());
    ASSERT_TRUE(writer.ok());
    std::vector<float> row(5, 1.0f);
    ASSERT_TRUE((*writer)->Append(1, row.data()).ok());
  }
  EXPECT_FALSE(Exists(path));
  EXPECT_FALSE(Exists(path + ".tmp"));
}

// A full disk, as the file size limit makes it: writes fail with EFBIG
// (SIGXFSZ ignored). Runs in a child so the limit does not outlive it.
TEST(TableFileTest, FullDiskFailsNamingThePathAndKeepsTheOldFile) {
  const std::string path = TempDir() + "/t.bin";
  auto old_file = WriteRows(path, Info(), 10);
  ASSERT_TRUE(old_file.ok()) << old_file.status();
  const std::string old_bytes = ReadAll(path);
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    rlimit limit{1 << 20, 1 << 20};
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) ::_exit(10);
    auto file = WriteRows(path, Info(), 200000);  // ~5.6 MB
    if (file.ok()) ::_exit(11);
    if (file.status().code() != absl::StatusCode::kUnavailable) ::_exit(12);
    const std::string message(file.status().message());
    if (message.find(path + ".tmp") == std::string::npos) ::_exit(13);
    if (message.find("File too large") == std::string::npos) ::_exit(14);
    ::_exit(Exists(path + ".tmp") ? 15 : 0);
  }
  int wstatus = 0;
  ASSERT_EQ(::waitpid(pid, &wstatus, 0), pid);
  ASSERT_TRUE(WIFEXITED(wstatus));
  EXPECT_EQ(WEXITSTATUS(wstatus), 0);
  EXPECT_EQ(ReadAll(path), old_bytes);
  EXPECT_TRUE(ReadRows(path, *old_file).ok());
}

}  // namespace
}  // namespace petrel
