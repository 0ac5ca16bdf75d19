#include "scheduler/job_progress.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace petrel {
namespace {

// An empty cell for an unknown value.
std::string Cell(double value, int digits) {
  if (std::isnan(value) || value < 0) return "";
  return absl::StrFormat("%.*f", digits, value);
}

}  // namespace

const char* JobProgress::CsvHeader() {
  return "kind,elapsed_s,epoch,fraction_done,examples,batches,examples_per_s,"
         "train_logloss,dataset,eval_logloss,eval_auc,eval_examples,"
         "eval_epoch,eval_batch";
}

std::string JobProgress::FormatSeconds(double seconds) {
  if (seconds < 60) return absl::StrFormat("%.1fs", seconds);
  const int64_t s = static_cast<int64_t>(seconds);
  if (s < 3600) return absl::StrFormat("%dm%02ds", s / 60, s % 60);
  return absl::StrFormat("%dh%02dm", s / 3600, (s % 3600) / 60);
}

JobProgress::JobProgress(JobProgressOptions options)
    : options_(std::move(options)) {}

absl::StatusOr<std::unique_ptr<JobProgress>> JobProgress::Create(
    JobProgressOptions options) {
  if (!options.print) {
    options.print = [](const std::string& line) {
      std::printf("%s\n", line.c_str());
      std::fflush(stdout);
    };
  }
  if (!options.now) options.now = [] { return absl::Now(); };
  std::unique_ptr<JobProgress> progress(new JobProgress(std::move(options)));
  const std::string& path = progress->options_.csv_path;
  if (!path.empty()) {
    const bool header =
        !progress->options_.append_csv || std::ifstream(path).peek() == EOF;
    auto csv = std::make_unique<std::ofstream>(
        path, progress->options_.append_csv ? std::ios::app : std::ios::trunc);
    if (!*csv) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot write the progress CSV ", path));
    }
    if (header) *csv << CsvHeader() << "\n" << std::flush;
    absl::MutexLock lock(&progress->mu_);
    progress->csv_ = std::move(csv);
  }
  return progress;
}

void JobProgress::OnProgress(int rank, const pb::WorkerProgress& progress) {
  absl::MutexLock lock(&mu_);
  if (finished_) return;
  const absl::Time now = options_.now();
  if (start_ == absl::InfiniteFuture()) start_ = now;
  workers_[rank] = progress;
  workers_[rank].clear_pieces();
  first_.try_emplace(rank,
                     FirstReport{progress.examples_trained(),
                                 std::max(0.0, progress.fraction_done())});
  if (now - last_line_ < options_.interval) return;
  last_line_ = now;
  EmitLocked();
}

JobSnapshot JobProgress::Snapshot() const {
  absl::MutexLock lock(&mu_);
  return SnapshotLocked();
}

JobSnapshot JobProgress::SnapshotLocked() const {
  JobSnapshot s;
  if (start_ != absl::InfiniteFuture()) {
    s.elapsed_s = absl::ToDoubleSeconds(options_.now() - start_);
  }
  double fraction = 0;
  double first_fraction = 0;
  int64_t examples_this_run = 0;
  bool known = !workers_.empty();
  double loss_sum = 0;
  int64_t loss_examples = 0;
  for (const auto& [rank, p] : workers_) {
    const FirstReport& first = first_.at(rank);
    s.examples += p.examples_trained();
    examples_this_run += p.examples_trained() - first.examples;
    first_fraction += first.fraction_done;
    s.batches += p.clock();
    s.epochs = std::max(s.epochs, p.epochs());
    if (p.fraction_done() < 0) known = false;
    fraction += std::max(0.0, p.fraction_done());
    if (p.window_examples() > 0 && std::isfinite(p.window_logloss())) {
      loss_sum += p.window_logloss() * p.window_examples();
      loss_examples += p.window_examples();
    }
  }
  s.train_logloss = loss_examples > 0
                        ? loss_sum / loss_examples
                        : std::numeric_limits<double>::quiet_NaN();
  s.examples_per_s = s.elapsed_s > 0 ? examples_this_run / s.elapsed_s : 0;
  // Workers that have not reported yet count as not started.
  if (known && !workers_.empty()) {
    s.fraction_done = std::min(1.0, fraction / workers_.size());
  }
  const int epochs = std::max(1, s.epochs);
  s.epoch =
      s.fraction_done >= 0
          ? std::min(epochs, 1 + static_cast<int>(s.fraction_done * epochs))
          : 1;
  const double done_this_run =
      s.fraction_done - std::min(1.0, first_fraction / workers_.size());
  if (done_this_run > 0 && s.elapsed_s > 0) {
    s.eta_s = s.elapsed_s * (1 - s.fraction_done) / done_this_run;
  }
  return s;
}

void JobProgress::EmitLocked() {
  const JobSnapshot s = SnapshotLocked();
  options_.print(absl::StrFormat(
      "progress epoch=%d/%d done=%s examples=%d examples_per_s=%.0f "
      "train_logloss=%s elapsed=%s eta=%s",
      s.epoch, std::max(1, s.epochs),
      s.fraction_done >= 0 ? absl::StrFormat("%.1f%%", 100 * s.fraction_done)
                           : std::string("?"),
      s.examples, s.examples_per_s,
      std::isnan(s.train_logloss) ? std::string("?")
                                  : absl::StrFormat("%.5f", s.train_logloss),
      FormatSeconds(s.elapsed_s),
      s.eta_s >= 0 ? FormatSeconds(s.eta_s) : std::string("?")));
  if (csv_ == nullptr) return;
  *csv_ << absl::StrFormat("train,%.3f,%d,%s,%d,%d,%.1f,%s,,,,,,\n",
                           s.elapsed_s, s.epoch, Cell(s.fraction_done, 5),
                           s.examples, s.batches, s.examples_per_s,
                           Cell(s.train_logloss, 6))
        << std::flush;
}

void JobProgress::OnEval(const pb::EvalReport& report) {
  absl::MutexLock lock(&mu_);
  if (finished_) return;
  const JobSnapshot s = SnapshotLocked();
  if (csv_ == nullptr) return;
  *csv_ << absl::StrFormat("eval,%.3f,%d,%s,%d,%d,%.1f,%s,%s,%s,%s,%d,%d,%d\n",
                           s.elapsed_s, s.epoch, Cell(s.fraction_done, 5),
                           s.examples, s.batches, s.examples_per_s,
                           Cell(s.train_logloss, 6), report.dataset(),
                           Cell(report.logloss(), 6), Cell(report.auc(), 6),
                           report.examples(), report.epoch(), report.batch())
        << std::flush;
}

void JobProgress::Finish() {
  absl::MutexLock lock(&mu_);
  if (finished_) return;
  if (!workers_.empty()) EmitLocked();
  finished_ = true;
  if (csv_ != nullptr) csv_->close();
}

}  // namespace petrel
