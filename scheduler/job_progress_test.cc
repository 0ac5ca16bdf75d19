#include "scheduler/job_progress.h"

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

namespace petrel {
namespace {

pb::WorkerProgress Report(int64_t examples, int64_t clock, double fraction,
                          double loss) {
  pb::WorkerProgress p;
  p.set_examples_trained(examples);
  p.set_clock(clock);
  p.set_fraction_done(fraction);
  p.set_window_logloss(loss);
  p.set_window_examples(examples);
  p.set_epochs(2);
  return p;
}

struct Fixture {
  absl::Time now = absl::UnixEpoch();
  std::vector<std::string> lines;
  std::unique_ptr<JobProgress> progress;

  explicit Fixture(const std::string& csv = "", bool append = false) {
    JobProgressOptions o;
    o.interval = absl::Seconds(2);
    o.csv_path = csv;
    o.append_csv = append;
    o.print = [this](const std::string& l) { lines.push_back(l); };
    o.now = [this] { return now; };
    absl::StatusOr<std::unique_ptr<JobProgress>> p = JobProgress::Create(o);
    EXPECT_TRUE(p.ok()) << p.status();
    progress = std::move(*p);
  }
};

TEST(JobProgressTest, MergesWorkersIntoOneLine) {
  Fixture f;
  f.progress->OnProgress(0, Report(0, 0, 0, NAN));
  f.progress->OnProgress(1, Report(0, 0, 0, NAN));
  f.now += absl::Seconds(10);
  f.progress->OnProgress(1, Report(3000, 3, 0.5, 0.4));
  f.progress->OnProgress(0, Report(1000, 1, 0.25, 0.6));
  // One line at the start, one 10 s later; the second report within the
  // interval printed none.
  ASSERT_EQ(f.lines.size(), 2u);
  JobSnapshot s = f.progress->Snapshot();
  EXPECT_EQ(s.examples, 4000);
  EXPECT_EQ(s.batches, 4);
  EXPECT_DOUBLE_EQ(s.fraction_done, 0.375);
  EXPECT_EQ(s.epoch, 1);
  EXPECT_EQ(s.epochs, 2);
  EXPECT_DOUBLE_EQ(s.examples_per_s, 400);
  EXPECT_NEAR(s.train_logloss, (0.6 * 1000 + 0.4 * 3000) / 4000, 1e-12);
  EXPECT_NEAR(s.eta_s, 10 * 0.625 / 0.375, 1e-9);
  f.now += absl::Seconds(3);
  f.progress->OnProgress(0, Report(2000, 2, 0.75, 0.5));
  ASSERT_EQ(f.lines.size(), 3u);
  EXPECT_NE(f.lines.back().find("progress epoch=2/2 done=62.5% "),
            std::string::npos)
      << f.lines.back();
  EXPECT_NE(f.lines.back().find(" eta="), std::string::npos);
}

// A job restored from a checkpoint starts at its workers' positions: the
// examples they trained before count in examples, not in the rate or the
// ETA (the first line came right after the first report).
TEST(JobProgressTest, RestoredExamplesAreNotCountedAsJustTrained) {
  Fixture f;
  f.progress->OnProgress(0, Report(500000, 500, 0.5, 0.4));
  f.progress->OnProgress(1, Report(500000, 500, 0.5, 0.4));
  f.now += absl::Milliseconds(1);
  JobSnapshot s = f.progress->Snapshot();
  EXPECT_EQ(s.examples, 1000000);
  EXPECT_DOUBLE_EQ(s.examples_per_s, 0);
  EXPECT_EQ(s.eta_s, -1);
  f.now += absl::Seconds(10) - absl::Milliseconds(1);
  f.progress->OnProgress(0, Report(501000, 501, 0.6, 0.4));
  f.progress->OnProgress(1, Report(501000, 501, 0.6, 0.4));
  s = f.progress->Snapshot();
  EXPECT_EQ(s.examples, 1002000);
  EXPECT_DOUBLE_EQ(s.examples_per_s, 200);
  // 10% of the job in 10 s: 40 s for the remaining 40%.
  EXPECT_NEAR(s.eta_s, 40, 1e-9);
  // The line came at worker 0's report, before worker 1's.
  EXPECT_NE(f.lines.back().find(" examples_per_s=100 "), std::string::npos)
      << f.lines.back();
}

TEST(JobProgressTest, UnknownFractionPrintsNoEta) {
  Fixture f;
  f.progress->OnProgress(0, Report(10, 1, -1, 0.5));
  ASSERT_EQ(f.lines.size(), 1u);
  EXPECT_NE(f.lines[0].find("done=? "), std::string::npos) << f.lines[0];
  EXPECT_NE(f.lines[0].find("eta=?"), std::string::npos) << f.lines[0];
  f.now += absl::Seconds(5);
  f.progress->OnProgress(0, Report(0, 0, 0, NAN));
  EXPECT_NE(f.lines.back().find("train_logloss=? "), std::string::npos)
      << f.lines.back();
}

TEST(JobProgressTest, FormatsDurations) {
  EXPECT_EQ(JobProgress::FormatSeconds(1.25), "1.2s");
  EXPECT_EQ(JobProgress::FormatSeconds(125), "2m05s");
  EXPECT_EQ(JobProgress::FormatSeconds(3725), "1h02m");
}

TEST(JobProgressTest, CsvRowsHaveTheHeadersColumns) {
  const std::string path =
      ::testing::TempDir() + "/job_progress_test_progress.csv";
  {
    Fixture f(path);
    f.progress->OnProgress(0, Report(100, 1, 0.1, 0.5));
    pb::EvalReport e;
    e.set_dataset("validation");
    e.set_epoch(1);
    e.set_batch(7);
    e.set_logloss(0.45);
    e.set_auc(0.8);
    e.set_examples(50);
    f.progress->OnEval(e);
    f.now += absl::Seconds(5);
    f.progress->OnProgress(0, Report(200, 2, 0.2, 0.4));
    f.progress->Finish();
    f.progress->Finish();
  }
  std::ifstream in(path);
  std::string line;
  std::vector<std::vector<std::string>> rows;
  while (std::getline(in, line)) {
    rows.push_back(absl::StrSplit(line, ','));
  }
  ASSERT_EQ(rows.size(), 5u);  // header, train, eval, train, final train
  EXPECT_EQ(rows[0][0], "kind");
  for (const auto& row : rows) EXPECT_EQ(row.size(), rows[0].size());
  EXPECT_EQ(rows[1][0], "train");
  EXPECT_EQ(rows[2][0], "eval");
  EXPECT_EQ(rows[2][8], "validation");
  EXPECT_EQ(rows[2][9], "0.450000");
  EXPECT_EQ(rows[2][13], "7");
  EXPECT_EQ(rows[3][4], "200");
  EXPECT_EQ(rows[4][0], "train");
  std::remove(path.c_str());
}

// A scheduler restarted with --recover appends to the dead one's CSV: one
// header, the rows of both.
TEST(JobProgressTest, AppendingKeepsTheRowsAndTheOneHeader) {
  const std::string path =
      ::testing::TempDir() + "/job_progress_test_append.csv";
  std::remove(path.c_str());
  for (int run = 0; run < 2; ++run) {
    Fixture f(path, /*append=*/true);
    f.progress->OnProgress(0, Report(100 * (run + 1), 1, 0.1, 0.5));
    f.progress->Finish();
  }
  std::ifstream in(path);
  std::string line;
  std::vector<std::vector<std::string>> rows;
  while (std::getline(in, line)) rows.push_back(absl::StrSplit(line, ','));
  ASSERT_EQ(rows.size(), 5u);  // header, then train and final train twice
  EXPECT_EQ(rows[0][0], "kind");
  for (size_t i = 1; i < rows.size(); ++i) EXPECT_EQ(rows[i][0], "train");
  EXPECT_EQ(rows[3][4], "200");
  std::remove(path.c_str());
}

TEST(JobProgressTest, UnwritableCsvIsAnError) {
  JobProgressOptions o;
  o.csv_path = "/nonexistent-dir/progress.csv";
  absl::StatusOr<std::unique_ptr<JobProgress>> p = JobProgress::Create(o);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("/nonexistent-dir/progress.csv"),
            std::string::npos);
}

}  // namespace
}  // namespace petrel
