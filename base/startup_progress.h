// StartupProgress: what a node is doing before it can serve (filling a dense
// table, loading a checkpoint), so that the line it prints when a signal
// stops it then names the work and how far it got, and so that long work
// says, every `log_every`, that it is still going:
//
//   still filling dense table 3 (14062500 rows, 10.5 GiB): 41% after 20s
//   petrel-server: SIGTERM received while filling dense table 3 (...): 41%
//       after 58s; stopping
//
// Long start-up work calls Begin, Advance as it goes and End, and checks
// cancelled() between steps of at most a few milliseconds; a signal calls
// Cancel.
//
// Thread safety: every method may be called from any thread; Advance from
// several at once.
#ifndef PETREL_BASE_STARTUP_PROGRESS_H_
#define PETREL_BASE_STARTUP_PROGRESS_H_

#include <atomic>
#include <cstdint>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace petrel {

class StartupProgress {
 public:
  explicit StartupProgress(absl::Duration log_every = absl::Seconds(10))
      : log_every_(log_every) {}
  StartupProgress(const StartupProgress&) = delete;
  StartupProgress& operator=(const StartupProgress&) = delete;

  // Starts a step of `total` units (>= 1) described by `what`, e.g.
  // "filling dense table 3 (14062500 rows, 10.5 GiB)", and logs `what` at
  // INFO.
  void Begin(std::string what, uint64_t total);
  // `units` more of the step are done. Logs "still WHAT: P% after Ns" at
  // INFO when log_every passed since the step began or the last such line.
  void Advance(uint64_t units);
  // The step is over: Describe() is empty again.
  void End();
  // "WHAT: P% after Ns" for the step under way; empty between steps.
  std::string Describe() const;

  // Asks the work to stop; `reason` is e.g. "SIGTERM received". The first
  // reason is kept.
  void Cancel(std::string reason);
  bool cancelled() const { return cancelled_.load(std::memory_order_relaxed); }
  // Cancelled("REASON while WHAT: P% after Ns"), or Cancelled(REASON)
  // between steps. REQUIRES: cancelled().
  absl::Status CancelledError() const;

 private:
  std::string DescribeLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const absl::Duration log_every_;
  std::atomic<bool> cancelled_{false};
  mutable absl::Mutex mu_;
  std::string what_ ABSL_GUARDED_BY(mu_);
  uint64_t total_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t done_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time began_ ABSL_GUARDED_BY(mu_);
  absl::Time logged_ ABSL_GUARDED_BY(mu_);
  std::string reason_ ABSL_GUARDED_BY(mu_);
};

}  // namespace petrel

#endif  // PETREL_BASE_STARTUP_PROGRESS_H_
