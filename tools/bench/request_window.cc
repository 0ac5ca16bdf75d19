#include "tools/bench/request_window.h"

#include <algorithm>
#include <atomic>
#include <deque>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"

namespace petrel {
namespace {

struct Slot {
  int ts = 0;
  int64_t index = 0;
  int64_t start_ns = 0;
  // Written by the completion callback (any thread), read after the wait
  // for the request returned, which orders the two.
  std::atomic<int64_t> end_ns{0};
};

// The slots are shared with the completion callbacks, so a callback that
// fires after the driver gave up still writes into live memory.
using Slots = std::shared_ptr<std::vector<Slot>>;

class Window {
 public:
  Window(const RequestWindowOptions& options, const IssueFn& issue,
         const WaitFn& wait, const CheckFn& check)
      : options_(options),
        issue_(issue),
        wait_(wait),
        check_(check),
        slots_(std::make_shared<std::vector<Slot>>(options.inflight)) {
    for (int i = options.inflight - 1; i >= 0; --i) free_.push_back(i);
  }

  absl::StatusOr<RequestWindowResult> Run();

 private:
  bool MayIssue(int64_t now_ns) const {
    if (issued_ >= options_.max_requests) return false;
    return options_.iterations > 0 ? issued_ < options_.iterations
                                   : now_ns < end_ns_;
  }
  void IssueOne();
  absl::Status CompleteOldest();
  void Drain();

  const RequestWindowOptions& options_;
  const IssueFn& issue_;
  const WaitFn& wait_;
  const CheckFn& check_;
  Slots slots_;
  std::vector<int> free_;
  std::deque<int> outstanding_;  // slots in issue order
  int64_t issued_ = 0;
  int64_t end_ns_ = 0;
  int64_t last_done_ns_ = 0;
  RequestWindowResult result_;
};

void Window::IssueOne() {
  const int slot = free_.back();
  free_.pop_back();
  Slot& s = (*slots_)[slot];
  s.index = issued_++;
  s.end_ns.store(0, std::memory_order_relaxed);
  s.start_ns = SteadyNowNanos();
  Slots keep = slots_;
  s.ts = issue_(s.index, slot, [keep, slot] {
    (*keep)[slot].end_ns.store(SteadyNowNanos(), std::memory_order_release);
  });
  outstanding_.push_back(slot);
}

absl::Status Window::CompleteOldest() {
  const int slot = outstanding_.front();
  outstanding_.pop_front();
  Slot& s = (*slots_)[slot];
  absl::Status status = wait_(s.ts, options_.timeout);
  if (status.ok() && check_) status = check_(s.index, slot);
  if (!status.ok()) {
    return absl::Status(status.code(), absl::StrCat("request ", s.index, ": ",
                                                    status.message()));
  }
  int64_t end = s.end_ns.load(std::memory_order_acquire);
  if (end == 0) end = SteadyNowNanos();  // `done` not called: count until now
  result_.latencies.AddNanos(end - s.start_ns);
  last_done_ns_ = std::max(last_done_ns_, end);
  ++result_.requests;
  free_.push_back(slot);
  return absl::OkStatus();
}

void Window::Drain() {
  for (int slot : outstanding_) {
    wait_((*slots_)[slot].ts, options_.timeout).IgnoreError();
  }
  outstanding_.clear();
}

absl::StatusOr<RequestWindowResult> Window::Run() {
  const int64_t start_ns = SteadyNowNanos();
  end_ns_ = start_ns + static_cast<int64_t>(options_.duration_s * 1e9);
  while (true) {
    while (static_cast<int>(outstanding_.size()) < options_.inflight &&
           MayIssue(SteadyNowNanos())) {
      IssueOne();
    }
    if (outstanding_.empty()) break;
    if (absl::Status s = CompleteOldest(); !s.ok()) {
      Drain();
      return s;
    }
  }
  FinishRequestResult(options_, issued_, start_ns, last_done_ns_, &result_);
  return std::move(result_);
}

}  // namespace

void FinishRequestResult(const RequestWindowOptions& options, int64_t issued,
                         int64_t start_ns, int64_t last_done_ns,
                         RequestWindowResult* result) {
  result->hit_max_requests =
      issued >= options.max_requests &&
      (options.iterations == 0 || options.iterations > options.max_requests);
  result->seconds = result->requests > 0 ? (last_done_ns - start_ns) / 1e9 : 0;
}

absl::StatusOr<RequestWindowResult> RunRequestWindow(
    const RequestWindowOptions& options, const IssueFn& issue,
    const WaitFn& wait, const CheckFn& check) {
  if (options.inflight < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("inflight is ", options.inflight, ", not >= 1"));
  }
  Window window(options, issue, wait, check);
  return window.Run();
}

}  // namespace petrel
