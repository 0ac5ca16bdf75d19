// JobProgress: the job's progress as one line and one CSV, merged by the
// scheduler from the progress every training worker reports every
// kProgressInterval (proto/recovery.proto's WorkerProgress) and from worker
// 0's evaluations (EvalReport). docs/training.md, "Progress", describes
// the line and the CSV's columns:
//
//   progress epoch=2/3 done=45.1% examples=123456 examples_per_s=81234
//       train_logloss=0.45678 elapsed=12.3s eta=15.0s
//
// The CSV has one row per progress line (kind=train) and one per
// evaluation (kind=eval); every column means the same on every row, and
// the job-wide columns (epoch, fraction_done, examples, batches,
// examples_per_s, train_logloss) are cumulative over the whole job at the
// row's time.
//
// Thread safety: thread-safe; OnProgress and OnEval run on the van thread
// and never block on the network.
#ifndef PETREL_SCHEDULER_JOB_PROGRESS_H_
#define PETREL_SCHEDULER_JOB_PROGRESS_H_

#include <cstdint>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

#include "proto/recovery.pb.h"

namespace petrel {

struct JobProgressOptions {
  // Least time between two progress lines. Default 2 s.
  absl::Duration interval = absl::Seconds(2);
  // Where the CSV goes; default empty: no CSV.
  std::string csv_path;
  // Append to an existing CSV (its header kept, none written again)
  // instead of starting it afresh: a scheduler restarted with --recover
  // continues the dead one's. Default false.
  bool append_csv = false;
  // Receives each line. Default: stdout.
  std::function<void(const std::string& line)> print;
  // The clock; default absl::Now (tests pass their own).
  std::function<absl::Time()> now;
};

// The job's merged state at one time.
struct JobSnapshot {
  int epoch = 0;              // 1-based
  int epochs = 0;             // train.epochs (0 before any report)
  double fraction_done = -1;  // 0..1; -1: not known yet
  int64_t examples = 0;       // trained, all workers
  int64_t batches = 0;        // all workers
  // Examples trained since each worker's first report, over elapsed_s: a
  // restored job's checkpointed examples are not counted as just trained.
  double examples_per_s = 0;
  double train_logloss = 0;  // NaN: none yet
  double elapsed_s = 0;      // since the first report
  double eta_s = -1;         // -1: not known; from this run's pace
};

class JobProgress {
 public:
  // Opens the CSV (when asked) and writes its header; FailedPrecondition
  // naming the path when it cannot be written.
  static absl::StatusOr<std::unique_ptr<JobProgress>> Create(
      JobProgressOptions options);
  JobProgress(const JobProgress&) = delete;
  JobProgress& operator=(const JobProgress&) = delete;

  // Worker `rank` reported; prints a line (and a CSV row) when the last
  // one is `interval` old.
  void OnProgress(int rank, const pb::WorkerProgress& progress);
  // Worker 0 evaluated (and printed its line): a CSV row.
  void OnEval(const pb::EvalReport& report);
  // The job ended: the last line and row. Idempotent.
  void Finish();

  JobSnapshot Snapshot() const;

  // The CSV's header line (without the newline).
  static const char* CsvHeader();
  // "1.5s", "2m05s", "1h02m".
  static std::string FormatSeconds(double seconds);

 private:
  explicit JobProgress(JobProgressOptions options);
  JobSnapshot SnapshotLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void EmitLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const JobProgressOptions options_;

  mutable absl::Mutex mu_;
  std::unique_ptr<std::ofstream> csv_ ABSL_GUARDED_BY(mu_);
  std::map<int, pb::WorkerProgress> workers_ ABSL_GUARDED_BY(mu_);  // by rank
  // Each rank's first report: where this run started from (a restored
  // checkpoint's examples and fraction, or the point a --recover
  // scheduler took over), so that rates and the ETA count this run only.
  struct FirstReport {
    int64_t examples = 0;
    double fraction_done = 0;
  };
  std::map<int, FirstReport> first_ ABSL_GUARDED_BY(mu_);  // by rank
  absl::Time start_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
  absl::Time last_line_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace petrel

#endif  // PETREL_SCHEDULER_JOB_PROGRESS_H_
