#include "tools/export/table_export.h"

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <stdlib.h>
#include <sys/stat.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "checkpoint/checkpoint_dir.h"
#include "checkpoint/table_file.h"

namespace petrel {
namespace {

using ::testing::HasSubstr;
using Rows = std::map<std::pair<int, uint64_t>, std::vector<float>>;

std::string TempDir() {
  std::string pattern = ::testing::TempDir() + "table_export_test.XXXXXX";
  EXPECT_NE(::mkdtemp(pattern.data()), nullptr);
  return pattern;
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A checkpoint of two servers: table 0 (dim 1, FTRL, stride 3) split over
// both, table 3 (dim 2, Adam, stride 7) on server 1 only. `rows` gets every
// stored row (all stride floats).
struct TestCheckpoint {
  std::string dir;
  pb::CheckpointManifest manifest;
  Rows rows;
};

TestCheckpoint WriteTestCheckpoint() {
  TestCheckpoint c;
  auto dir = CreateCheckpointDir(TempDir(), 7);
  EXPECT_TRUE(dir.ok()) << dir.status();
  c.dir = *dir;
  c.manifest.set_format_version(kCheckpointFormatVersion);
  c.manifest.set_id(7);
  c.manifest.set_num_servers(2);
  struct Spec {
    int id, dim, stride;
    pb::OptimizerProto::Kind kind;
  };
  const Spec specs[] = {{0, 1, 3, pb::OptimizerProto::KIND_FTRL},
                        {3, 2, 7, pb::OptimizerProto::KIND_ADAM}};
  for (const Spec& s : specs) {
    pb::CheckpointTable* t = c.manifest.add_tables();
    t->set_id(s.id);
    t->set_dim(s.dim);
    t->set_stride(s.stride);
    t->set_optimizer(s.kind);
    for (int rank = s.id == 0 ? 0 : 1; rank < 2; ++rank) {
      TableFileInfo info{s.id, s.dim, s.stride, s.kind};
      auto w = TableFileWriter::Create(c.dir + "/" + TableFileName(s.id, rank),
                                       info);
      EXPECT_TRUE(w.ok()) << w.status();
      for (uint64_t k = 0; k < 5; ++k) {
        const uint64_t key = k * 1000 + rank + (s.id == 0 ? 0 : ~0ull - 10);
        std::vector<float> row(s.stride);
        for (int j = 0; j < s.stride; ++j) row[j] = 0.125f * j - key % 7;
        EXPECT_TRUE((*w)->Append(key, row.data()).ok());
        c.rows[{s.id, key}] = row;
      }
      auto file = (*w)->Finish();
      EXPECT_TRUE(file.ok()) << file.status();
      file->set_server_rank(rank);
      file->set_table_id(s.id);
      *c.manifest.add_files() = *file;
    }
  }
  EXPECT_TRUE(WriteManifest(c.dir, c.manifest).ok());
  return c;
}

// Keeps the first `floats` floats of every row.
Rows Truncated(const Rows& rows, const std::map<int, int>& floats) {
  Rows out;
  for (const auto& [k, v] : rows) {
    out[k] = std::vector<float>(v.begin(), v.begin() + floats.at(k.first));
  }
  return out;
}

Rows ParseText(const std::string& path) {
  Rows rows;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream s(line);
    int id;
    uint64_t key;
    s >> id >> key;
    std::vector<float> v;
    for (float f; s >> f;) v.push_back(f);
    rows[{id, key}] = v;
  }
  return rows;
}

Rows ReadBinary(const std::string& path) {
  Rows rows;
  absl::Status s = ReadBinaryExport(
      path,
      [&](const ExportedTable& t, uint64_t key, absl::Span<const float> v) {
        rows[{t.id, key}] = std::vector<float>(v.begin(), v.end());
        return absl::OkStatus();
      });
  EXPECT_TRUE(s.ok()) << s;
  return rows;
}

TEST(TableExportTest, TextRoundTripsTheWeights) {
  TestCheckpoint c = WriteTestCheckpoint();
  const std::string out = c.dir + "/../model.txt";
  auto stats = ExportCheckpoint(c.dir, c.manifest, {}, out);
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->tables, 2);
  EXPECT_EQ(stats->rows, 15u);
  EXPECT_EQ(ParseText(out), Truncated(c.rows, {{0, 1}, {3, 2}}));
  EXPECT_FALSE(Exists(out + ".tmp"));
  // The first line: table 0, server 0's first row.
  EXPECT_EQ(ReadAll(out).substr(0, 5), "0 0 0");
}

TEST(TableExportTest, TextWithStateHasEveryFloat) {
  TestCheckpoint c = WriteTestCheckpoint();
  const std::string out = c.dir + "/../model.txt";
  ExportOptions options;
  options.with_state = true;
  ASSERT_TRUE(ExportCheckpoint(c.dir, c.manifest, options, out).ok());
  EXPECT_EQ(ParseText(out), c.rows);
}

TEST(TableExportTest, BinaryRoundTripsWithAndWithoutState) {
  TestCheckpoint c = WriteTestCheckpoint();
  const std::string out = c.dir + "/../model.bin";
  ExportOptions options;
  options.format = ExportFormat::kBinary;
  auto stats = ExportCheckpoint(c.dir, c.manifest, options, out);
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(ReadBinary(out), Truncated(c.rows, {{0, 1}, {3, 2}}));
  // 16 + 2 section headers + 10 rows of (8 + 4) + 5 rows of (8 + 8).
  EXPECT_EQ(stats->bytes, 16u + 2 * 32 + 10 * 12 + 5 * 16);
  EXPECT_EQ(ReadAll(out).size(), stats->bytes);
  options.with_state = true;
  ASSERT_TRUE(ExportCheckpoint(c.dir, c.manifest, options, out).ok());
  EXPECT_EQ(ReadBinary(out), c.rows);
}

TEST(TableExportTest, BinaryBytesAreTheDocumentedLayout) {
  TestCheckpoint c = WriteTestCheckpoint();
  const std::string out = c.dir + "/../model.bin";
  ExportOptions options;
  options.format = ExportFormat::kBinary;
  options.tables = {3};
  ASSERT_TRUE(ExportCheckpoint(c.dir, c.manifest, options, out).ok());
  const std::string bytes = ReadAll(out);
  ASSERT_EQ(bytes.size(), 16u + 32 + 5 * 16);
  const std::string header("PTRLEXP1\x01\0\0\0\x01\0\0\0", 16);
  EXPECT_EQ(bytes.substr(0, 16), header);
  // id 3, dim 2, 2 floats per row, KIND_ADAM = 3, 5 rows, not dense.
  const std::string section(
      "\x03\0\0\0\x02\0\0\0\x02\0\0\0\x03\0\0\0"
      "\x05\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0",
      32);
  EXPECT_EQ(bytes.substr(16, 32), section);
  // First row: key 2^64 - 10 (0xfffffffffffffff6), then two floats.
  EXPECT_EQ(bytes.substr(48, 8),
            std::string("\xf6\xff\xff\xff\xff\xff\xff\xff"));
}

TEST(TableExportTest, SelectedTablesOnly) {
  TestCheckpoint c = WriteTestCheckpoint();
  const std::string out = c.dir + "/../model.txt";
  ExportOptions options;
  options.tables = {3};
  auto stats = ExportCheckpoint(c.dir, c.manifest, options, out);
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->rows, 5u);
  for (const auto& [k, v] : ParseText(out)) EXPECT_EQ(k.first, 3);
  options.tables = {4};
  auto missing = ExportCheckpoint(c.dir, c.manifest, options, out);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("no table 4"));
}

TEST(TableExportTest, CorruptedTableFileIsDataLossNamingItAndLeavesNoOutput) {
  TestCheckpoint c = WriteTestCheckpoint();
  const std::string file = c.dir + "/" + TableFileName(3, 1);
  std::string bytes = ReadAll(file);
  bytes[bytes.size() / 2] ^= 0x40;
  std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
  const std::string out = c.dir + "/../model.txt";
  auto stats = ExportCheckpoint(c.dir, c.manifest, {}, out);
  EXPECT_EQ(stats.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(stats.status().message(), HasSubstr(file));
  EXPECT_FALSE(Exists(out));
  EXPECT_FALSE(Exists(out + ".tmp"));
}

TEST(TableExportTest, UnwritableOutputIsUnavailableNamingIt) {
  TestCheckpoint c = WriteTestCheckpoint();
  auto stats =
      ExportCheckpoint(c.dir, c.manifest, {}, c.dir + "/no/such/dir/x.txt");
  EXPECT_EQ(stats.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(stats.status().message(), HasSubstr("/no/such/dir/x.txt.tmp"));
}

TEST(TableExportTest, ReaderRejectsDamagedFiles) {
  TestCheckpoint c = WriteTestCheckpoint();
  const std::string out = c.dir + "/../model.bin";
  ExportOptions options;
  options.format = ExportFormat::kBinary;
  ASSERT_TRUE(ExportCheckpoint(c.dir, c.manifest, options, out).ok());
  const std::string bytes = ReadAll(out);
  auto read = [&](const std::string& content) {
    std::ofstream(out, std::ios::binary | std::ios::trunc) << content;
    return ReadBinaryExport(
        out, [](const ExportedTable&, uint64_t, absl::Span<const float>) {
          return absl::OkStatus();
        });
  };
  EXPECT_TRUE(read(bytes).ok());
  absl::Status truncated = read(bytes.substr(0, bytes.size() - 1));
  EXPECT_EQ(truncated.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(truncated.message(), HasSubstr(out));
  EXPECT_EQ(read(bytes + "x").code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(read("PTRLEXPX" + bytes.substr(8)).code(),
            absl::StatusCode::kDataLoss);
  EXPECT_EQ(ReadBinaryExport(out + ".none", nullptr).code(),
            absl::StatusCode::kNotFound);
}

TEST(TableExportTest, ParsesFlags) {
  EXPECT_EQ(*ParseExportFormat("text"), ExportFormat::kText);
  EXPECT_EQ(*ParseExportFormat("binary"), ExportFormat::kBinary);
  EXPECT_EQ(ParseExportFormat("csv").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(*ParseTableIds(""), std::vector<int>());
  EXPECT_EQ(*ParseTableIds("0,2"), (std::vector<int>{0, 2}));
  EXPECT_EQ(ParseTableIds("0,x").status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace petrel
