// The petrel-predict and petrel-export binaries: exit codes 0 / 1 (runtime) /
// 2 (flags), one line per error, --help, and a run of each on a checkpoint.
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "base/config_file.h"
#include "checkpoint/checkpoint_dir.h"
#include "cluster/key_range_map.h"
#include "server/table_server.h"
#include "tools/launch/subprocess.h"
#include "worker/train/trainer.h"

namespace petrel {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr absl::Duration kDeadline = absl::Seconds(30);

struct Result {
  int exit_code = -1;
  std::string output;  // stdout and stderr
  std::vector<std::string> lines() const {
    return absl::StrSplit(output, '\n', absl::SkipEmpty());
  }
};

Result Run(const char* binary, std::vector<std::string> args) {
  Subprocess::Options options;
  options.argv = {binary};
  options.argv.insert(options.argv.end(), args.begin(), args.end());
  Result result;
  auto proc = Subprocess::Start(std::move(options));
  EXPECT_TRUE(proc.ok()) << proc.status();
  if (!proc.ok()) return result;
  absl::StatusOr<int> code = (*proc)->Wait(kDeadline);
  EXPECT_TRUE(code.ok()) << code.status();
  result.exit_code = code.ok() ? *code : -1;
  result.output = (*proc)->Output();
  return result;
}

Result Predict(std::vector<std::string> args) {
  return Run(PETREL_PREDICT_BINARY, std::move(args));
}
Result Export(std::vector<std::string> args) {
  return Run(PETREL_EXPORT_BINARY, std::move(args));
}

// An LR checkpoint (one server, tables as created) and a test file.
class ToolsMainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "tools_main_test.XXXXXX";
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    test_ = dir_ + "/test.txt";
    std::ofstream(test_) << "1 1:0.5 7:1\n0 2:1\n1 3:0.25 9:2\n";
    pb::JobConfig job;
    ASSERT_TRUE(ParseTextProto(R"(
      model { kind: KIND_LR }
      tables { id: 0 initializer { kind: KIND_NORMAL scale: 0.5 seed: 3 } }
      data { train: "unused.txt" }
    )",
                               "job", &job)
                    .ok());
    ASSERT_TRUE(ResolveTrainDefaults(&job).ok());
    auto server = TableServer::Create(job, 1, nullptr);
    ASSERT_TRUE(server.ok());
    auto ckpt = CreateCheckpointDir(dir_ + "/ckpt", 4);
    ASSERT_TRUE(ckpt.ok());
    ckpt_ = *ckpt;
    auto ranges = KeyRangeMap::Uniform(1, 1);
    auto files = (*server)->SaveCheckpoint(ckpt_, *ranges, 0);
    ASSERT_TRUE(files.ok()) << files.status();
    pb::CheckpointManifest manifest;
    manifest.set_format_version(kCheckpointFormatVersion);
    manifest.set_id(4);
    *manifest.mutable_job() = job;
    for (const auto& t : (*server)->CheckpointTables()) {
      *manifest.add_tables() = t;
    }
    manifest.set_num_servers(1);
    manifest.add_range_begins(0);
    manifest.add_range_owners(0);
    for (const auto& f : *files) *manifest.add_files() = f;
    ASSERT_TRUE(WriteManifest(ckpt_, manifest).ok());
  }

  std::string dir_, test_, ckpt_;
};

void ExpectOneLineError(const Result& r, int code, const std::string& text) {
  EXPECT_EQ(r.exit_code, code) << r.output;
  ASSERT_EQ(r.lines().size(), 1u) << r.output;
  EXPECT_THAT(r.output, HasSubstr(text));
}

TEST_F(ToolsMainTest, PredictWritesScoresAndSummary) {
  const std::string out = dir_ + "/scores.txt";
  Result r = Predict({"--model=" + dir_ + "/ckpt/latest", "--input=" + test_,
                      "--output=" + out, "--device=cpu"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, StartsWith("petrel-predict: examples=3 logloss="));
  EXPECT_THAT(r.output, HasSubstr("checkpoint=" + ckpt_));
  std::ifstream in(out);
  std::vector<float> scores;
  for (float f; in >> f;) scores.push_back(f);
  ASSERT_EQ(scores.size(), 3u);
  for (float p : scores) EXPECT_TRUE(p > 0 && p < 1) << p;
  struct stat st;
  EXPECT_NE(::stat((out + ".tmp").c_str(), &st), 0);
  // Without --output the scores go to stdout, the summary to stderr.
  r = Predict({"--model=" + ckpt_, "--input=" + test_});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.lines().size(), 4u) << r.output;
}

// Reads what is waiting in a FIFO opened without blocking.
std::string Drain(int fd) {
  std::string data;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) data.append(buf, n);
  return data;
}

// An output that is not a regular file (a FIFO here, /dev/null for users)
// is written in place: renaming FILE.tmp over it would replace the device
// node with a regular file.
TEST_F(ToolsMainTest, OutputToAFifoIsWrittenInPlace) {
  const std::string fifo = dir_ + "/scores.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // The reader end is open before the tools run, so their open for writing
  // does not block; the few bytes fit in the pipe's buffer.
  const int fd = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(fd, 0);
  Result r = Predict({"--model=" + ckpt_, "--input=" + test_,
                      "--output=" + fifo, "--device=cpu"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const std::vector<std::string> scores =
      absl::StrSplit(Drain(fd), '\n', absl::SkipEmpty());
  EXPECT_EQ(scores.size(), 3u);
  r = Export({"--model=" + ckpt_, "--output=" + fifo, "--format=text"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  ::close(fd);  // the tables hold no rows yet: nothing to read
  struct stat st;
  ASSERT_EQ(::stat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_NE(::stat((fifo + ".tmp").c_str(), &st), 0);
}

TEST_F(ToolsMainTest, PredictErrors) {
  ExpectOneLineError(Predict({"--modle=x"}), 2, "modle");
  ExpectOneLineError(Predict({"--model=" + ckpt_}), 2, "--input is required");
  ExpectOneLineError(Predict({"--input=" + test_}), 2, "--model is required");
  ExpectOneLineError(
      Predict({"--model=" + ckpt_, "--input=" + test_, "--format=csv"}), 2,
      "--format=csv is not libsvm or criteo");
  ExpectOneLineError(
      Predict({"--model=" + ckpt_, "--input=" + test_, "--device=tpu"}), 2,
      "--device");
  ExpectOneLineError(Predict({"--model=" + ckpt_, "--input=" + test_, "x"}), 2,
                     "unexpected argument 'x'");
  ExpectOneLineError(Predict({"--model=" + dir_ + "/none", "--input=" + test_}),
                     1, dir_ + "/none");
  ExpectOneLineError(
      Predict({"--model=" + ckpt_, "--input=" + dir_ + "/none.txt"}), 1,
      "none.txt");
  ExpectOneLineError(Predict({"--model=" + ckpt_, "--input=" + test_,
                              "--output=" + dir_ + "/no/dir/s.txt"}),
                     1, dir_ + "/no/dir/s.txt.tmp");
  Result help = Predict({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_THAT(help.output, HasSubstr("petrel-predict --model=CHECKPOINT"));
  EXPECT_THAT(help.output, HasSubstr("-batch_size"));
}

TEST_F(ToolsMainTest, ExportWritesTablesAndRejectsBadFlags) {
  const std::string out = dir_ + "/model.bin";
  Result r = Export(
      {"--model=" + dir_ + "/ckpt", "--output=" + out, "--format=binary"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, StartsWith("petrel-export: checkpoint=" + ckpt_ +
                                   " tables=1 rows=0 bytes=48"));
  ExpectOneLineError(
      Export({"--model=" + ckpt_, "--output=" + out, "--format=xml"}), 2,
      "--format: format \"xml\" is not text or binary");
  ExpectOneLineError(Export({"--model=" + ckpt_}), 2, "--output is required");
  ExpectOneLineError(
      Export({"--model=" + ckpt_, "--output=" + out, "--tables=1,a"}), 2,
      "\"a\" is not a table id");
  ExpectOneLineError(
      Export({"--model=" + ckpt_, "--output=" + out, "--tables=9"}), 1,
      "no table 9");
  ExpectOneLineError(Export({"--model=" + dir_, "--output=" + out}), 1,
                     "not a complete checkpoint");
  Result help = Export({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_THAT(help.output, HasSubstr("-with_state"));
}

}  // namespace
}  // namespace petrel
