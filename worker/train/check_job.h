// The `check` job of petrel-worker: a self-verifying push/pull run that
// exercises a whole cluster. Every worker pushes the value (rank + 1) to
// each of the dense keys 0..num_keys-1 for `rounds` rounds (a few requests
// in flight), the workers meet at a barrier of the worker group, and each
// pulls every key and checks that it equals rounds * W * (W + 1) / 2 exactly
// (the servers sum; W is the number of workers).
//
// Every wait has a deadline and ends early when the job terminates (the
// scheduler's TERMINATE or Postoffice::Interrupt, e.g. on SIGTERM).
//
// Thread safety: RunCheckJob blocks the calling thread; run one at a time
// per KVWorker.
#ifndef PETREL_WORKER_TRAIN_CHECK_JOB_H_
#define PETREL_WORKER_TRAIN_CHECK_JOB_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

#include "cluster/postoffice.h"
#include "kv/kv_worker.h"

namespace petrel {

struct CheckJobOptions {
  // Keys 0..num_keys-1. Default 1000; range 1 .. 2^24.
  int num_keys = 1000;
  // Push rounds. Default 10; range >= 1, and rounds * W * (W + 1) / 2 must
  // stay below 2^24 so that float sums are exact.
  int rounds = 10;
  // Push requests outstanding at once. Default 4; range 1 .. 1024.
  int inflight = 4;
  // Deadline of each wait (one request, the barrier). Default 60 s; > 0.
  absl::Duration timeout = absl::Seconds(60);
};

// InvalidArgument naming the bad field and value. The bound that depends
// on the number of workers is checked by RunCheckJob once it is known.
absl::Status ValidateCheckJobOptions(const CheckJobOptions& options);

// Runs the job with `kv` (started, on a joined worker `postoffice`) and
// returns the result line "check rank=R keys=N rounds=K ok=true". Errors:
// InvalidArgument when the expected sum would reach 2^24 (before anything is
// sent); DataLoss naming the first key whose sum is wrong (expected and got);
// DeadlineExceeded when a request or the barrier missed its deadline;
// Aborted with the reason when the job ended while waiting.
// REQUIRES: ValidateCheckJobOptions(options) is OK.
absl::StatusOr<std::string> RunCheckJob(Postoffice* postoffice,
                                        KVWorker<float>* kv,
                                        const CheckJobOptions& options);

}  // namespace petrel

#endif  // PETREL_WORKER_TRAIN_CHECK_JOB_H_
