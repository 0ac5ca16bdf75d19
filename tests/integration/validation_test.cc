// Validation, early stopping and the progress CSV end to end: petrel-launch
// runs a job on petrel-datagen data with a learning rate far too high for
// it, so that the validation logloss gets worse after its first evaluations;
// early stopping must end every worker cleanly (exit 0), name the
// evaluation it kept, and keep a "best" checkpoint of that point beside the
// final one. The scheduler's progress CSV of the same run must have one
// meaning per column, train and eval rows, and the final test row.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

#include "checkpoint/checkpoint_dir.h"
#include "tests/harness/daemon_cluster.h"

namespace petrel {
namespace {

constexpr absl::Duration kTimeout = absl::Seconds(100);

std::string Bin(const std::string& name) {
  return std::string(PETREL_BIN_DIR) + "/" + name;
}

std::string RunProgram(std::vector<std::string> argv, int* code) {
  absl::StatusOr<std::unique_ptr<Subprocess>> p = StartProgram(std::move(argv));
  if (!p.ok()) return std::string(p.status().message());
  absl::StatusOr<int> c = (*p)->Wait(kTimeout);
  *code = c.ok() ? *c : -1;
  return (*p)->Output();
}

using Row = std::map<std::string, std::string>;

std::vector<Row> ReadCsv(const std::string& path, std::string* error) {
  std::ifstream in(path);
  std::string line;
  std::vector<std::string> header;
  std::vector<Row> rows;
  if (!std::getline(in, line)) {
    *error = "no header";
    return rows;
  }
  header = absl::StrSplit(line, ',');
  while (std::getline(in, line)) {
    std::vector<std::string> cells = absl::StrSplit(line, ',');
    if (cells.size() != header.size()) {
      *error = absl::StrCat("row with ", cells.size(), " cells, header has ",
                            header.size(), ": ", line);
      return rows;
    }
    Row row;
    for (size_t i = 0; i < header.size(); ++i) row[header[i]] = cells[i];
    rows.push_back(std::move(row));
  }
  return rows;
}

double Num(const Row& row, const std::string& column) {
  double v = -1;
  auto it = row.find(column);
  if (it == row.end() || !absl::SimpleAtod(it->second, &v)) return -1;
  return v;
}

class ValidationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        absl::StrCat(::testing::TempDir(), "petrel_validation_test_", getpid());
    std::system(("rm -rf " + dir_ + " && mkdir -p " + dir_).c_str());
    int code = 0;
    std::string out = RunProgram(
        {Bin("petrel-datagen"), "--train_out=" + dir_ + "/train.svm",
         "--train_examples=20000", "--test_out=" + dir_ + "/test.svm",
         "--test_examples=4000", "--seed=3"},
        &code);
    ASSERT_EQ(code, 0) << out;
  }
  void TearDown() override { std::system(("rm -rf " + dir_).c_str()); }

  std::string WriteConfig(const std::string& text) {
    const std::string path = dir_ + "/job.textproto";
    std::ofstream(path) << text;
    return path;
  }

  std::string dir_;
};

TEST_F(ValidationTest, StopsEveryWorkerAndKeepsTheBestCheckpoint) {
  // SGD at learning rate 40 on the batch's mean gradient overshoots: the
  // validation logloss jumps around well above its best after the first
  // evaluations. (At 2, the rate this test had on summed gradients, the
  // mean-gradient run converges slowly and may not stop within 5 epochs.)
  const std::string config = WriteConfig(R"(
num_servers: 1
num_workers: 2
model { kind: KIND_LR }
tables { id: 0 dim: 1 optimizer { kind: KIND_SGD learning_rate: 40 } }
data { format: FORMAT_LIBSVM validation_fraction: 0.2 validation_seed: 1 }
train { batch_size: 256 epochs: 20 eval_every_batches: 10
        progress_interval_s: 0.2
        early_stopping { metric: METRIC_LOGLOSS patience: 2 } }
checkpoint { keep: 1 }
)");
  const std::string csv = dir_ + "/progress.csv";
  int code = 0;
  const std::string out = RunProgram(
      {Bin("petrel-launch"), "--config=" + config,
       "--train=" + dir_ + "/train.svm", "--test=" + dir_ + "/test.svm",
       "--checkpoint_dir=" + dir_ + "/ckpt", "--progress_csv=" + csv,
       "--timeout_s=90"},
      &code);
  ASSERT_EQ(code, 0) << out;
  EXPECT_TRUE(absl::StrContains(out, "early stopping: validation logloss"))
      << out;
  EXPECT_EQ(ValueAfter(out, "final test_logloss", "early_stopped"), 1) << out;
  const double kept_epoch = ValueAfter(out, "final test_logloss", "kept_epoch");
  const double kept_batch = ValueAfter(out, "final test_logloss", "kept_batch");
  ASSERT_GE(kept_epoch, 1) << out;
  ASSERT_GT(kept_batch, 0) << out;
  // Stopped long before 20 epochs of 2 x 8000 examples.
  const double trained =
      ValueAfter(out, "final test_logloss", "train_examples");
  EXPECT_GT(trained, 0) << out;
  EXPECT_LT(trained, 5 * 16000) << out;
  // One merged progress line per job, from the scheduler.
  EXPECT_TRUE(absl::StrContains(out, "[scheduler] progress epoch=")) << out;
  EXPECT_FALSE(absl::StrContains(out, "progress worker=")) << out;

  // The best checkpoint survives retention (keep: 1) beside the final one,
  // and holds worker 0 at (or just after) the evaluation it names.
  absl::StatusOr<std::vector<uint64_t>> ids = ListCheckpoints(dir_ + "/ckpt");
  ASSERT_TRUE(ids.ok()) << ids.status();
  ASSERT_EQ(ids->size(), 2u) << out;
  absl::StatusOr<pb::CheckpointManifest> best =
      ReadManifest(CheckpointPath(dir_ + "/ckpt", ids->front()));
  ASSERT_TRUE(best.ok()) << best.status();
  EXPECT_EQ(best->reason(), kBestCheckpointReason);
  ASSERT_EQ(best->workers_size(), 2);
  EXPECT_EQ(best->workers(0).rank(), 0);
  EXPECT_GE(best->workers(0).clock(), kept_batch);
  EXPECT_LE(best->workers(0).clock(), kept_batch + 2);
  absl::StatusOr<pb::CheckpointManifest> last =
      ReadManifest(CheckpointPath(dir_ + "/ckpt", ids->back()));
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_EQ(last->reason(), "end");

  // The CSV: one meaning per column on every row.
  std::string error;
  std::vector<Row> rows = ReadCsv(csv, &error);
  ASSERT_TRUE(error.empty()) << error;
  int train_rows = 0, validation_rows = 0, test_rows = 0;
  double last_examples = 0, last_elapsed = 0;
  for (const Row& row : rows) {
    const std::string& kind = row.at("kind");
    ASSERT_TRUE(kind == "train" || kind == "eval") << kind;
    // Cumulative over the job: never goes back.
    EXPECT_GE(Num(row, "examples"), last_examples);
    EXPECT_GE(Num(row, "elapsed_s"), last_elapsed);
    last_examples = Num(row, "examples");
    last_elapsed = Num(row, "elapsed_s");
    EXPECT_GE(Num(row, "epoch"), 1);
    EXPECT_LE(Num(row, "epoch"), 20);
    if (kind == "train") {
      ++train_rows;
      EXPECT_EQ(row.at("dataset"), "");
      EXPECT_EQ(row.at("eval_logloss"), "");
      continue;
    }
    EXPECT_GT(Num(row, "eval_logloss"), 0);
    EXPECT_GT(Num(row, "eval_auc"), 0);
    EXPECT_GT(Num(row, "eval_examples"), 0);
    if (row.at("dataset") == "validation") {
      ++validation_rows;
      // About 20% of the 20000 examples.
      EXPECT_NEAR(Num(row, "eval_examples"), 4000, 400);
    } else {
      ASSERT_EQ(row.at("dataset"), "test");
      ++test_rows;
      EXPECT_EQ(Num(row, "eval_examples"), 4000);
    }
  }
  EXPECT_GE(train_rows, 2);
  EXPECT_GE(validation_rows, 3);  // the best, then `patience` worse ones
  EXPECT_EQ(test_rows, 1);
  EXPECT_EQ(rows.back().at("kind"), "train");  // the final line's row
  // The training examples: all but the held-out ones, ~16000 per epoch.
  EXPECT_EQ(Num(rows.back(), "examples"), trained);
}

TEST_F(ValidationTest, EarlyStoppingWithoutValidationDataIsAConfigError) {
  const std::string config = WriteConfig(R"(
model { kind: KIND_LR }
train { early_stopping { metric: METRIC_AUC } }
)");
  int code = 0;
  const std::string out =
      RunProgram({Bin("petrel-worker"), "--job=train", "--config=" + config,
                  "--train=" + dir_ + "/train.svm", "--scheduler=127.0.0.1:1"},
                 &code);
  EXPECT_EQ(code, 2) << out;
  EXPECT_TRUE(absl::StrContains(out, "data.validation")) << out;
}

// The whole-config check refuses it before anything starts.
TEST_F(ValidationTest, PetrelLaunchRefusesEarlyStoppingWithoutValidation) {
  const std::string config = WriteConfig(R"(
model { kind: KIND_LR }
train { early_stopping { metric: METRIC_LOGLOSS } }
)");
  int code = 0;
  const std::string out = RunProgram(
      {Bin("petrel-launch"), "--config=" + config,
       "--train=" + dir_ + "/train.svm", "--test=" + dir_ + "/test.svm"},
      &code);
  EXPECT_EQ(code, 2) << out;
  EXPECT_TRUE(absl::StrContains(out, "needs validation data")) << out;
  EXPECT_FALSE(absl::StrContains(out, "PETREL_LISTEN")) << out;
}

TEST_F(ValidationTest, ValidationFilesAndFractionTogetherAreAConfigError) {
  const std::string config = WriteConfig(absl::StrCat(
      "data { validation: \"", dir_, "/test.svm\" validation_fraction: 0.1 }"));
  int code = 0;
  const std::string out =
      RunProgram({Bin("petrel-worker"), "--job=train", "--config=" + config,
                  "--train=" + dir_ + "/train.svm", "--scheduler=127.0.0.1:1"},
                 &code);
  EXPECT_EQ(code, 2) << out;
  EXPECT_TRUE(absl::StrContains(out, "validation_fraction")) << out;
}

}  // namespace
}  // namespace petrel
