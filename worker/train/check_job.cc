#include "worker/train/check_job.h"

#include <algorithm>
#include <deque>

#include "absl/strings/str_cat.h"

#include "base/status_macros.h"
#include "van/message.h"

namespace petrel {
namespace {

// How often a wait looks whether the job has ended meanwhile.
constexpr absl::Duration kPollSlice = absl::Milliseconds(100);

// OK while the job runs; the reason once it ended.
absl::Status CheckNotTerminated(Postoffice* po) {
  absl::Status t = po->WaitForTerminate(absl::ZeroDuration());
  if (absl::IsDeadlineExceeded(t)) return absl::OkStatus();
  if (t.ok()) {
    return absl::AbortedError(
        "the scheduler ended the job before this worker finished");
  }
  return t;
}

// Waits for request `ts` up to `timeout`, in slices, so that a job that
// ends (a dead server, a signal) ends the wait at once.
absl::Status WaitRequest(Postoffice* po, KVWorker<float>* kv, int ts,
                         absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    absl::Duration left =
        std::max(deadline - absl::Now(), absl::ZeroDuration());
    absl::Status s = kv->Wait(ts, std::min(kPollSlice, left));
    if (!absl::IsDeadlineExceeded(s)) return s;
    PETREL_RETURN_IF_ERROR(CheckNotTerminated(po));
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("no answer within ", absl::FormatDuration(timeout), ": ",
                       s.message()));
    }
  }
}

// Pushes `rounds` times, keeping up to `inflight` requests outstanding.
absl::Status PushRounds(Postoffice* po, KVWorker<float>* kv,
                        const SArray<Key>& keys, const SArray<float>& vals,
                        const CheckJobOptions& options) {
  std::deque<int> outstanding;
  for (int round = 0; round < options.rounds; ++round) {
    PETREL_RETURN_IF_ERROR(Annotate(CheckNotTerminated(po), "push"));
    if (static_cast<int>(outstanding.size()) >= options.inflight) {
      PETREL_RETURN_IF_ERROR(Annotate(
          WaitRequest(po, kv, outstanding.front(), options.timeout), "push"));
      outstanding.pop_front();
    }
    outstanding.push_back(kv->Push(keys, vals));
  }
  for (int ts : outstanding) {
    PETREL_RETURN_IF_ERROR(
        Annotate(WaitRequest(po, kv, ts, options.timeout), "push"));
  }
  return absl::OkStatus();
}

absl::Status CheckSums(const SArray<float>& got, size_t num_keys,
                       int64_t expected) {
  if (got.size() != num_keys) {
    return absl::DataLossError(absl::StrCat("pull returned ", got.size(),
                                            " values for ", num_keys, " keys"));
  }
  for (size_t k = 0; k < num_keys; ++k) {
    if (got[k] != static_cast<float>(expected)) {
      return absl::DataLossError(absl::StrCat(
          "mismatch at key ", k, ": expected ", expected, " got ", got[k]));
    }
  }
  return absl::OkStatus();
}

int64_t ExpectedSum(int rounds, int num_workers) {
  return int64_t{rounds} * num_workers * (num_workers + 1) / 2;
}

}  // namespace

absl::Status ValidateCheckJobOptions(const CheckJobOptions& options) {
  if (options.num_keys < 1 || options.num_keys > (1 << 24)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--num_keys: ", options.num_keys, " is not in 1..2^24"));
  }
  if (options.rounds < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--rounds: ", options.rounds, " is not >= 1"));
  }
  if (options.inflight < 1 || options.inflight > 1024) {
    return absl::InvalidArgumentError(
        absl::StrCat("--inflight: ", options.inflight, " is not in 1..1024"));
  }
  if (options.timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--timeout_s: must be > 0");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> RunCheckJob(Postoffice* po, KVWorker<float>* kv,
                                        const CheckJobOptions& options) {
  const int num_workers = po->num_workers();
  const int64_t expected = ExpectedSum(options.rounds, num_workers);
  if (expected >= (int64_t{1} << 24)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--rounds: ", options.rounds, " rounds with ", num_workers,
        " workers sum past 2^24, where float sums stop being exact"));
  }
  const size_t n = static_cast<size_t>(options.num_keys);
  SArray<Key> keys(n);
  for (size_t k = 0; k < n; ++k) keys[k] = k;
  const int rank = po->my_rank();
  SArray<float> vals(n, static_cast<float>(rank + 1));
  PETREL_RETURN_IF_ERROR(PushRounds(po, kv, keys, vals, options));
  PETREL_RETURN_IF_ERROR(
      Annotate(po->Barrier(kWorkerGroup, options.timeout), "worker barrier"));
  SArray<float> got;
  PETREL_RETURN_IF_ERROR(Annotate(
      WaitRequest(po, kv, kv->Pull(keys, &got), options.timeout), "pull"));
  PETREL_RETURN_IF_ERROR(CheckSums(got, n, expected));
  return absl::StrCat("check rank=", rank, " keys=", n,
                      " rounds=", options.rounds, " ok=true");
}

}  // namespace petrel
