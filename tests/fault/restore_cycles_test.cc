// Kill -9 right after a checkpoint, restore, again and again: petrel-launch
// (2 servers, 2 workers, LR) is killed with SIGKILL as soon as it prints
// that a checkpoint is complete, then started again with
// --restore_from=latest, 20 times in a row. Every restore must load (its
// daemons died with the killed launcher, so no old job goes on writing or
// retaining checkpoints of the root; the restored job takes none before
// its servers loaded), no checkpoint may fail, the progress figures stay
// those of one run, and the job, run to its end at last, ends within 0.5%
// of an uninterrupted run's test logloss with the same examples trained.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <signal.h>
#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

#include "checkpoint/checkpoint_dir.h"
#include "tests/harness/daemon_cluster.h"
#include "tests/harness/lr_job.h"

namespace petrel {
namespace {

constexpr absl::Duration kTimeout = absl::Seconds(60);
constexpr int kCycles = 20;

class RestoreCyclesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        absl::StrCat(::testing::TempDir(), "petrel_restore_cycles_", getpid());
    const absl::Status s = FreshLrData(PETREL_BIN_DIR, dir_, 40000, kTimeout);
    ASSERT_TRUE(s.ok()) << s;
    ckpt_ = dir_ + "/ckpt";
    // A checkpoint every 3 of worker 0's batches: about 80 in the run, of
    // which the cycles use one each.
    config_ = dir_ + "/job.textproto";
    std::ofstream(config_) << LrJobText(dir_, 2, 2)
                           << "train { batch_size: 256 epochs: 3 "
                              "progress_interval_s: 0.2 }\n"
                              "checkpoint { every_batches: 3 }\n";
  }

  void TearDown() override { std::system(("rm -rf " + dir_).c_str()); }

  absl::StatusOr<std::unique_ptr<Subprocess>> Launch(
      std::vector<std::string> flags) {
    std::vector<std::string> argv = {
        std::string(PETREL_BIN_DIR) + "/petrel-launch", "--config=" + config_,
        "--timeout_s=60"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    return StartProgram(std::move(argv));
  }

  // The next checkpoint id of the root.
  uint64_t NextId() {
    absl::StatusOr<std::vector<uint64_t>> ids = ListCheckpoints(ckpt_);
    EXPECT_TRUE(ids.ok()) << ids.status();
    return ids.ok() && !ids->empty() ? ids->back() + 1 : 1;
  }

  std::string dir_;
  std::string ckpt_;
  std::string config_;
};

// The examples_per_s of every merged progress line in `out`.
std::vector<double> ProgressRates(const std::string& out) {
  std::vector<double> rates;
  for (absl::string_view line : absl::StrSplit(out, '\n')) {
    if (!absl::StrContains(line, "progress epoch=")) continue;
    const size_t at = line.find("examples_per_s=");
    if (at == absl::string_view::npos) continue;
    absl::string_view rest = line.substr(at + 15);
    double rate;
    if (absl::SimpleAtod(rest.substr(0, rest.find(' ')), &rate)) {
      rates.push_back(rate);
    }
  }
  return rates;
}

TEST_F(RestoreCyclesTest, TwentyKillsAfterACheckpointEachRestore) {
  absl::StatusOr<std::unique_ptr<Subprocess>> plain = Launch({});
  ASSERT_TRUE(plain.ok()) << plain.status();
  absl::StatusOr<int> code = (*plain)->Wait(kTimeout);
  ASSERT_TRUE(code.ok() && *code == 0) << (*plain)->Output();
  const std::string plain_out = (*plain)->Output();
  const double plain_loss =
      ValueAfter(plain_out, "final test_logloss", "test_logloss");
  const double plain_examples =
      ValueAfter(plain_out, "final test_logloss", "train_examples");
  ASSERT_GT(plain_loss, 0) << plain_out;

  int restores = 0;
  double max_rate = 0;
  for (int cycle = 0; cycle < kCycles; ++cycle) {
    const uint64_t next = NextId();
    std::vector<std::string> flags = {"--checkpoint_dir=" + ckpt_};
    if (cycle > 0) flags.push_back("--restore_from=latest");
    absl::StatusOr<std::unique_ptr<Subprocess>> launch = Launch(flags);
    ASSERT_TRUE(launch.ok()) << launch.status();
    Subprocess* l = launch->get();
    absl::StatusOr<std::string> line =
        l->WaitForLine(absl::StrCat("checkpoint ", next, " ("), kTimeout);
    ASSERT_TRUE(line.ok()) << "cycle " << cycle << ": " << line.status() << "\n"
                           << l->Output();
    ASSERT_TRUE(absl::StrContains(*line, "complete")) << *line;
    l->Signal(SIGKILL);
    ASSERT_TRUE(l->Wait(kTimeout).ok());
    const std::string out = l->Output();
    EXPECT_FALSE(absl::StrContains(out, ") failed:"))
        << "cycle " << cycle << "\n"
        << out;
    if (cycle > 0) {
      EXPECT_TRUE(absl::StrContains(out, "the job resumes from")) << out;
      ++restores;
    }
    for (double rate : ProgressRates(out)) max_rate = std::max(max_rate, rate);
  }
  EXPECT_EQ(restores, kCycles - 1);
  // No progress line took the checkpoint's examples for this run's (the
  // issue's 273297425743/s); this job trains well under 10^7 a second.
  EXPECT_LT(max_rate, 1e7);

  absl::StatusOr<std::unique_ptr<Subprocess>> last =
      Launch({"--checkpoint_dir=" + ckpt_, "--restore_from=latest"});
  ASSERT_TRUE(last.ok()) << last.status();
  code = (*last)->Wait(kTimeout);
  const std::string out = (*last)->Output();
  ASSERT_TRUE(code.ok() && *code == 0) << out;
  const double loss = ValueAfter(out, "final test_logloss", "test_logloss");
  const double examples =
      ValueAfter(out, "final test_logloss", "train_examples");
  std::printf(
      "uninterrupted: test_logloss=%.5f train_examples=%.0f; after %d "
      "kill -9 / restore cycles: test_logloss=%.5f train_examples=%.0f, "
      "highest progress rate %.0f/s\n",
      plain_loss, plain_examples, kCycles, loss, examples, max_rate);
  EXPECT_LT(std::abs(loss - plain_loss) / plain_loss, 0.005)
      << "restored " << loss << " uninterrupted " << plain_loss;
  EXPECT_EQ(examples, plain_examples);
}

}  // namespace
}  // namespace petrel
