#include "base/staged_output.h"

#include <cstdio>
#include <fstream>
#include <string>

#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace petrel {
namespace {

class StagedOutputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(::testing::TempDir(), "staged_output_test_", getpid());
    ASSERT_EQ(mkdir(dir_.c_str(), 0700), 0);
  }
  void TearDown() override {
    std::remove((dir_ + "/out").c_str());
    std::remove((dir_ + "/out.tmp").c_str());
    std::remove((dir_ + "/fifo").c_str());
    rmdir(dir_.c_str());
  }
  std::string dir_;
};

TEST_F(StagedOutputTest, RegularOrMissingFilesAreStagedAndRenamed) {
  const std::string out = dir_ + "/out";
  EXPECT_EQ(StagingPath(out), out + ".tmp");
  std::ofstream(out) << "old";
  const std::string staging = StagingPath(out);
  ASSERT_EQ(staging, out + ".tmp");
  std::ofstream(staging) << "new";
  ASSERT_TRUE(CommitStaged(staging, out).ok());
  std::string text;
  std::ifstream(out) >> text;
  EXPECT_EQ(text, "new");
  struct stat st;
  EXPECT_NE(stat(staging.c_str(), &st), 0);
  std::ofstream(staging) << "half";
  DiscardStaged(staging, out);
  EXPECT_NE(stat(staging.c_str(), &st), 0);
}

TEST_F(StagedOutputTest, DevicesAndFifosAreWrittenInPlace) {
  EXPECT_EQ(StagingPath("/dev/null"), "/dev/null");
  const std::string fifo = dir_ + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(StagingPath(fifo), fifo);
  // Committing or discarding in place renames and removes nothing: the
  // device stays a device.
  ASSERT_TRUE(CommitStaged("/dev/null", "/dev/null").ok());
  DiscardStaged("/dev/null", "/dev/null");
  struct stat st;
  ASSERT_EQ(stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
}

TEST_F(StagedOutputTest, AFailedRenameNamesBothPaths) {
  const absl::Status s = CommitStaged(dir_ + "/missing.tmp", dir_ + "/out");
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("missing.tmp"), std::string::npos) << s;
}

}  // namespace
}  // namespace petrel
