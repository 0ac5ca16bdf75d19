#include "tools/bench/request_chain.h"

#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

namespace petrel {
namespace {

// Shared with the callbacks, which may run on another thread.
class Chain : public std::enable_shared_from_this<Chain> {
 public:
  Chain(const RequestWindowOptions& options, const IssueFn& issue,
        const CheckFn& check)
      : options_(options),
        issue_(issue),
        check_(check),
        start_ns_(options.inflight, 0) {}

  absl::StatusOr<RequestWindowResult> Run();

 private:
  // Issues the next request in `slot`, or retires the slot when done.
  void IssueNext(int slot);
  void OnDone(int slot, int64_t index);

  const RequestWindowOptions& options_;
  const IssueFn& issue_;
  const CheckFn& check_;
  int64_t end_ns_ = 0;

  absl::Mutex mu_;
  std::vector<int64_t> start_ns_ ABSL_GUARDED_BY(mu_);
  int64_t issued_ ABSL_GUARDED_BY(mu_) = 0;
  int outstanding_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t last_done_ns_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status error_ ABSL_GUARDED_BY(mu_);
  RequestWindowResult result_ ABSL_GUARDED_BY(mu_);
};

void Chain::IssueNext(int slot) {
  int64_t index;
  {
    absl::MutexLock lock(&mu_);
    const int64_t now = SteadyNowNanos();
    bool more = error_.ok() && issued_ < options_.max_requests &&
                (options_.iterations > 0 ? issued_ < options_.iterations
                                         : now < end_ns_);
    if (!more) {
      --outstanding_;
      return;
    }
    index = issued_++;
    start_ns_[slot] = now;
  }
  std::shared_ptr<Chain> self = shared_from_this();
  issue_(index, slot, [self, slot, index] { self->OnDone(slot, index); });
}

void Chain::OnDone(int slot, int64_t index) {
  const int64_t end = SteadyNowNanos();
  absl::Status status = check_ ? check_(index, slot) : absl::OkStatus();
  {
    absl::MutexLock lock(&mu_);
    result_.latencies.AddNanos(end - start_ns_[slot]);
    ++result_.requests;
    last_done_ns_ = std::max(last_done_ns_, end);
    if (!status.ok() && error_.ok()) {
      error_ = absl::Status(status.code(), absl::StrCat("request ", index, ": ",
                                                        status.message()));
    }
  }
  IssueNext(slot);
}

absl::StatusOr<RequestWindowResult> Chain::Run() {
  const int64_t start_ns = SteadyNowNanos();
  end_ns_ = start_ns + static_cast<int64_t>(options_.duration_s * 1e9);
  {
    absl::MutexLock lock(&mu_);
    outstanding_ = options_.inflight;
  }
  for (int slot = 0; slot < options_.inflight; ++slot) IssueNext(slot);
  absl::MutexLock lock(&mu_);
  int64_t seen = -1;
  while (outstanding_ > 0) {
    // Progress, not total time, is bounded: each wait ends when a request
    // completes or `timeout` passes without one.
    seen = result_.requests;
    auto moved = [this, seen]() ABSL_SHARED_LOCKS_REQUIRED(mu_) -> bool {
      return outstanding_ == 0 || result_.requests != seen;
    };
    if (!mu_.AwaitWithTimeout(absl::Condition(&moved), options_.timeout)) {
      return absl::DeadlineExceededError(
          absl::StrCat("no request completed within ",
                       absl::FormatDuration(options_.timeout)));
    }
  }
  if (!error_.ok()) return error_;
  FinishRequestResult(options_, issued_, start_ns, last_done_ns_, &result_);
  return std::move(result_);
}

}  // namespace

absl::StatusOr<RequestWindowResult> RunRequestChain(
    const RequestWindowOptions& options, const IssueFn& issue,
    const CheckFn& check) {
  if (options.inflight < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("inflight is ", options.inflight, ", not >= 1"));
  }
  auto chain = std::make_shared<Chain>(options, issue, check);
  return chain->Run();
}

}  // namespace petrel
