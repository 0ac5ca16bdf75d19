#include "checkpoint/checkpoint_dir.h"

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "checkpoint/start_checkpoint.h"
#include "checkpoint/table_file.h"

namespace petrel {
namespace {

using ::testing::ElementsAre;
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
  std::string pattern = ::testing::TempDir() + "checkpoint_dir_test.XXXXXX";
  char* made = ::mkdtemp(pattern.data());
  EXPECT_NE(made, nullptr);
  TempDirs().push_back(pattern);
  return pattern;
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

void WriteAll(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

pb::CheckpointTable Table(int id, int dim, int stride,
                          pb::OptimizerProto::Kind kind, bool dense = false,
                          uint64_t num_keys = 0) {
  pb::CheckpointTable t;
  t.set_id(id);
  t.set_dim(dim);
  t.set_stride(stride);
  t.set_optimizer(kind);
  t.set_dense(dense);
  t.set_num_keys(num_keys);
  return t;
}

// A complete checkpoint `id` under `root` with one table file of 4 rows.
std::string WriteCheckpoint(const std::string& root, uint64_t id,
                            const std::string& reason = "") {
  auto dir = CreateCheckpointDir(root, id);
  EXPECT_TRUE(dir.ok()) << dir.status();
  TableFileInfo info;
  info.table_id = 1;
  info.dim = 1;
  info.stride = 3;
  auto writer = TableFileWriter::Create(*dir + "/" + TableFileName(1, 0), info);
  EXPECT_TRUE(writer.ok()) << writer.status();
  const float row[3] = {1, 2, 3};
  for (uint64_t key = 0; key < 4; ++key) {
    EXPECT_TRUE((*writer)->Append(key, row).ok());
  }
  auto file = (*writer)->Finish();
  EXPECT_TRUE(file.ok()) << file.status();
  pb::CheckpointManifest manifest;
  manifest.set_format_version(kCheckpointFormatVersion);
  manifest.set_id(id);
  manifest.set_num_servers(1);
  manifest.set_reason(reason);
  *manifest.add_tables() = Table(1, 1, 3, pb::OptimizerProto::KIND_FTRL);
  *manifest.add_files() = *file;
  EXPECT_TRUE(WriteManifest(*dir, manifest).ok());
  return *dir;
}

TEST(CheckpointDirTest, Names) {
  EXPECT_EQ(CheckpointPath("/r", 12), "/r/ckpt-00000012");
  EXPECT_EQ(CheckpointPath("/r", 123456789), "/r/ckpt-123456789");
  EXPECT_EQ(TableFileName(2, 5), "table-2-server-5.bin");
}

TEST(CheckpointDirTest, ManifestRoundTrip) {
  const std::string root = TempDir() + "/a/b";  // parents created
  const std::string dir = WriteCheckpoint(root, 7);
  EXPECT_EQ(dir, root + "/ckpt-00000007");
  EXPECT_FALSE(Exists(dir + "/MANIFEST.tmp"));
  auto manifest = ReadManifest(dir);
  ASSERT_TRUE(manifest.ok()) << manifest.status();
  EXPECT_EQ(manifest->id(), 7u);
  ASSERT_EQ(manifest->files_size(), 1);
  EXPECT_EQ(manifest->files(0).name(), "table-1-server-0.bin");
  EXPECT_EQ(manifest->files(0).rows(), 4u);
}

TEST(CheckpointDirTest, NoManifestIsNotFoundAndNeverListed) {
  const std::string root = TempDir();
  WriteCheckpoint(root, 1);
  auto incomplete = CreateCheckpointDir(root, 2);
  ASSERT_TRUE(incomplete.ok());
  EXPECT_EQ(ReadManifest(*incomplete).status().code(),
            absl::StatusCode::kNotFound);
  auto ids = ListCheckpoints(root);
  ASSERT_TRUE(ids.ok());
  EXPECT_THAT(*ids, ElementsAre(1));
  auto latest = ResolveCheckpoint("latest", root);
  ASSERT_TRUE(latest.ok());
  EXPECT_EQ(*latest, CheckpointPath(root, 1));
}

TEST(CheckpointDirTest, ManifestWithAMissingOrResizedFileIsDataLoss) {
  const std::string root = TempDir();
  const std::string dir = WriteCheckpoint(root, 1);
  const std::string file = dir + "/" + TableFileName(1, 0);
  WriteAll(file, "short");
  auto resized = ReadManifest(dir);
  EXPECT_EQ(resized.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(resized.status().message(), HasSubstr(file));
  ::unlink(file.c_str());
  EXPECT_EQ(ReadManifest(dir).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(*ListCheckpoints(root), ElementsAre());
}

TEST(CheckpointDirTest, GarbageManifestIsDataLoss) {
  const std::string root = TempDir();
  const std::string dir = WriteCheckpoint(root, 1);
  WriteAll(dir + "/MANIFEST", "\xff\xff\xff garbage");
  auto m = ReadManifest(dir);
  EXPECT_EQ(m.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(m.status().message(), HasSubstr(dir + "/MANIFEST"));
}

TEST(CheckpointDirTest, ResolveLatestAndExplicit) {
  const std::string root = TempDir();
  EXPECT_EQ(ResolveCheckpoint("latest", root).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(ResolveCheckpoint("latest", root + "/none").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(ResolveCheckpoint("latest", "").status().code(),
            absl::StatusCode::kInvalidArgument);
  WriteCheckpoint(root, 3);
  WriteCheckpoint(root, 10);
  ASSERT_TRUE(CreateCheckpointDir(root, 11).ok());  // in progress
  EXPECT_EQ(*ResolveCheckpoint("latest", root), CheckpointPath(root, 10));
  EXPECT_EQ(*ResolveCheckpoint(CheckpointPath(root, 3), ""),
            CheckpointPath(root, 3));
  auto missing = ResolveCheckpoint(CheckpointPath(root, 11), root);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr(CheckpointPath(root, 11)));
}

TEST(CheckpointDirTest, ListIgnoresOtherNames) {
  const std::string root = TempDir();
  WriteCheckpoint(root, 2);
  ASSERT_EQ(::mkdir((root + "/ckpt-2").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir((root + "/ckpt-0000000x").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir((root + "/other").c_str(), 0755), 0);
  EXPECT_THAT(*ListCheckpoints(root), ElementsAre(2));
}

TEST(CheckpointDirTest, CreateReplacesAnIncompleteOneButNotAComplete) {
  const std::string root = TempDir();
  auto dir = CreateCheckpointDir(root, 5);
  ASSERT_TRUE(dir.ok());
  WriteAll(*dir + "/leftover", "x");
  dir = CreateCheckpointDir(root, 5);
  ASSERT_TRUE(dir.ok());
  EXPECT_FALSE(Exists(*dir + "/leftover"));
  WriteCheckpoint(root, 6);
  EXPECT_EQ(CreateCheckpointDir(root, 6).status().code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_TRUE(ReadManifest(CheckpointPath(root, 6)).ok());
}

TEST(CheckpointDirTest, RetainKeepsTheNewestComplete) {
  const std::string root = TempDir();
  for (uint64_t id = 1; id <= 5; ++id) WriteCheckpoint(root, id);
  ASSERT_TRUE(CreateCheckpointDir(root, 3).status().code() ==
              absl::StatusCode::kAlreadyExists);
  ASSERT_TRUE(RetainCheckpoints(root, 2).ok());
  EXPECT_THAT(*ListCheckpoints(root), ElementsAre(4, 5));
  EXPECT_FALSE(Exists(CheckpointPath(root, 1)));
  EXPECT_FALSE(Exists(CheckpointPath(root, 3)));
  EXPECT_EQ(RetainCheckpoints(root, 0).code(),
            absl::StatusCode::kInvalidArgument);
}

// Early stopping's best model outlives `keep`; only the newest best does.
TEST(CheckpointDirTest, RetainKeepsTheNewestBestToo) {
  const std::string root = TempDir();
  WriteCheckpoint(root, 1, kBestCheckpointReason);
  WriteCheckpoint(root, 2, kBestCheckpointReason);
  for (uint64_t id = 3; id <= 5; ++id) WriteCheckpoint(root, id, "end");
  ASSERT_TRUE(RetainCheckpoints(root, 1).ok());
  EXPECT_THAT(*ListCheckpoints(root), ElementsAre(2, 5));
}

TEST(CheckpointDirTest, RetainRemovesIncompleteOnlyBehindACompleteOne) {
  const std::string root = TempDir();
  WriteCheckpoint(root, 1);
  ASSERT_TRUE(CreateCheckpointDir(root, 2).ok());  // failed, incomplete
  ASSERT_TRUE(CreateCheckpointDir(root, 3).ok());  // in progress
  // The newest complete is 1: nothing newer is touched, 1 is kept.
  ASSERT_TRUE(RetainCheckpoints(root, 1).ok());
  EXPECT_TRUE(Exists(CheckpointPath(root, 1)));
  EXPECT_TRUE(Exists(CheckpointPath(root, 2)));
  EXPECT_TRUE(Exists(CheckpointPath(root, 3)));
  // 3 completes: 1 (older than keep) and 2 (incomplete, older) go.
  ::rmdir(CheckpointPath(root, 3).c_str());
  WriteCheckpoint(root, 3);
  ASSERT_TRUE(RetainCheckpoints(root, 1).ok());
  EXPECT_FALSE(Exists(CheckpointPath(root, 1)));
  EXPECT_FALSE(Exists(CheckpointPath(root, 2)));
  EXPECT_THAT(*ListCheckpoints(root), ElementsAre(3));
}

TEST(CheckpointDirTest, CheckWritable) {
  const std::string root = TempDir();
  EXPECT_TRUE(CheckWritableDir(root + "/x/y").ok());
  EXPECT_TRUE(Exists(root + "/x/y"));
  EXPECT_TRUE(CheckWritableFile(root + "/z/model.txt").ok());
  WriteAll(root + "/plain", "x");
  // Under a regular file: ENOTDIR, also for root.
  absl::Status dir = CheckWritableDir(root + "/plain/sub");
  EXPECT_EQ(dir.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(dir.message(), HasSubstr(root + "/plain/sub"));
  EXPECT_THAT(dir.message(), HasSubstr("Not a directory"));
  absl::Status file = CheckWritableFile(root + "/plain/model.txt");
  EXPECT_EQ(file.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(file.message(), HasSubstr(root + "/plain"));
  absl::Status is_dir = CheckWritableFile(root + "/x");
  EXPECT_EQ(is_dir.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(is_dir.message(), HasSubstr("is a directory"));
  EXPECT_TRUE(CheckWritableFile(root + "/plain").ok());  // exists, writable
}

TEST(CheckpointDirTest, CheckCompatibleNamesTheMismatch) {
  pb::CheckpointManifest m;
  m.set_format_version(kCheckpointFormatVersion);
  *m.add_tables() = Table(0, 1, 3, pb::OptimizerProto::KIND_FTRL);
  *m.add_tables() = Table(1, 16, 32, pb::OptimizerProto::KIND_ADAGRAD);
  *m.add_tables() = Table(2, 4, 8, pb::OptimizerProto::KIND_ADAGRAD, true, 100);
  std::vector<pb::CheckpointTable> job(m.tables().begin(), m.tables().end());
  EXPECT_TRUE(CheckCompatible(m, job, true).ok());

  auto expect = [&](std::vector<pb::CheckpointTable> tables, bool with_state,
                    const std::string& message) {
    absl::Status s = CheckCompatible(m, tables, with_state);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << message;
    EXPECT_THAT(s.message(), HasSubstr(message));
  };
  auto changed = job;
  changed[1].set_dim(8);
  expect(changed, false, "table 1: checkpoint dim 16, job dim 8");
  changed = job;
  changed[2].set_num_keys(200);
  expect(changed, false, "table 2: checkpoint has 100 dense keys, job 200");
  changed = job;
  changed[2].set_dense(false);
  expect(changed, false, "table 2: checkpoint table is dense");
  changed = job;
  changed[0].set_optimizer(pb::OptimizerProto::KIND_SGD);
  changed[0].set_stride(1);
  expect(changed, true, "table 0: checkpoint optimizer KIND_FTRL");
  EXPECT_TRUE(CheckCompatible(m, changed, false).ok());  // weights only
  changed = job;
  changed[1].set_stride(33);
  expect(changed, true, "table 1: checkpoint stride 32, job stride 33");
  changed = job;
  changed.pop_back();
  expect(changed, false, "table 2: in the checkpoint, not in the job");
  changed = job;
  changed.push_back(Table(7, 1, 1, pb::OptimizerProto::KIND_SGD));
  expect(changed, false, "table 7: in the job, not in the checkpoint");
  pb::CheckpointManifest v2 = m;
  v2.set_format_version(2);
  EXPECT_EQ(CheckCompatible(v2, job, true).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(StartCheckpointTest, NothingConfiguredStartsFromNothing) {
  auto start = FindStartCheckpoint(pb::CheckpointConfig(), 2);
  ASSERT_TRUE(start.ok()) << start.status();
  EXPECT_TRUE(start->dir.empty());
  EXPECT_FALSE(start->restore);
}

TEST(StartCheckpointTest, RestoreChecksTheWorkerCount) {
  const std::string root = TempDir();
  const std::string dir = WriteCheckpoint(root, 3);
  auto manifest = ReadManifest(dir);
  ASSERT_TRUE(manifest.ok()) << manifest.status();
  manifest->add_workers()->set_rank(0);
  manifest->add_workers()->set_rank(1);
  ASSERT_TRUE(WriteManifest(dir, *manifest).ok());

  pb::CheckpointConfig config;
  config.set_dir(root);
  config.set_restore_from("latest");
  auto start = FindStartCheckpoint(config, 2);
  ASSERT_TRUE(start.ok()) << start.status();
  EXPECT_EQ(start->dir, dir);
  EXPECT_TRUE(start->restore);
  EXPECT_TRUE(start->with_state);
  EXPECT_EQ(start->manifest.workers_size(), 2);

  auto refused = FindStartCheckpoint(config, 3);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(),
              HasSubstr("taken with 2 workers and this job has 3"));
}

TEST(StartCheckpointTest, WarmStartIgnoresWorkersAndMayResetState) {
  const std::string root = TempDir();
  const std::string dir = WriteCheckpoint(root, 1);
  pb::CheckpointConfig config;
  config.set_warm_start_from(dir);
  config.set_warm_start_reset_optimizer(true);
  auto start = FindStartCheckpoint(config, 5);
  ASSERT_TRUE(start.ok()) << start.status();
  EXPECT_EQ(start->dir, dir);
  EXPECT_FALSE(start->restore);
  EXPECT_FALSE(start->with_state);

  config.set_warm_start_from(root + "/ckpt-00000009");
  EXPECT_FALSE(FindStartCheckpoint(config, 5).ok());
}

}  // namespace
}  // namespace petrel
