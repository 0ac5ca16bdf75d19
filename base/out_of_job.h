// A node that the job went on without: it hung past the heartbeat timeout
// (SIGSTOP, a long stall, a partition), was declared dead, its work failed
// over or was reassigned, and when it came back the scheduler told it so.
// It stops with OutOfJobError and exits kExitOutOfJob, which a launcher
// takes as "this node left", like a kill, not as the job's failure.
//
// Thread safety: stateless.
#ifndef PETREL_BASE_OUT_OF_JOB_H_
#define PETREL_BASE_OUT_OF_JOB_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/cord.h"
#include "absl/strings/string_view.h"

namespace petrel {

// The exit code of such a node (0 finished, 1 failed, 2 bad input).
inline constexpr int kExitOutOfJob = 3;

inline constexpr char kOutOfJobPayload[] = "petrel.out_of_job";

// Unavailable(`message`), marked as out of the job.
inline absl::Status OutOfJobError(absl::string_view message) {
  absl::Status s = absl::UnavailableError(message);
  s.SetPayload(kOutOfJobPayload, absl::Cord("1"));
  return s;
}

inline bool IsOutOfJob(const absl::Status& status) {
  return status.GetPayload(kOutOfJobPayload).has_value();
}

}  // namespace petrel

#endif  // PETREL_BASE_OUT_OF_JOB_H_
