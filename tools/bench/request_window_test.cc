#include "tools/bench/request_window.h"

#include <deque>
#include <functional>
#include <map>

#include "gtest/gtest.h"

namespace petrel {
namespace {

// A fake transport: requests complete, in order, only when the driver waits
// for them, so the test sees exactly how many were outstanding.
class FakeRequests {
 public:
  int Issue(int64_t index, int slot, std::function<void()> done) {
    EXPECT_GE(slot, 0);
    issued_indices_.push_back(index);
    pending_[next_ts_] = std::move(done);
    max_outstanding_ = std::max(max_outstanding_, pending_.size());
    return next_ts_++;
  }
  absl::Status Wait(int ts, absl::Duration) {
    auto it = pending_.find(ts);
    if (it == pending_.end()) return absl::InternalError("unknown ts");
    it->second();
    pending_.erase(it);
    return ts == fail_ts_ ? absl::DeadlineExceededError("server 0 silent")
                          : absl::OkStatus();
  }

  std::map<int, std::function<void()>> pending_;
  std::vector<int64_t> issued_indices_;
  size_t max_outstanding_ = 0;
  int next_ts_ = 100;
  int fail_ts_ = -1;
};

RequestWindowResult MustRun(const RequestWindowOptions& options,
                            FakeRequests* fake, const CheckFn& check) {
  absl::StatusOr<RequestWindowResult> r = RunRequestWindow(
      options,
      [fake](int64_t i, int slot, std::function<void()> done) {
        return fake->Issue(i, slot, std::move(done));
      },
      [fake](int ts, absl::Duration t) { return fake->Wait(ts, t); }, check);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *std::move(r) : RequestWindowResult();
}

TEST(RequestWindowTest, CompletesIterationsWithInflightOutstanding) {
  FakeRequests fake;
  RequestWindowOptions options;
  options.inflight = 4;
  options.iterations = 10;
  std::vector<int64_t> checked;
  RequestWindowResult r = MustRun(options, &fake, [&](int64_t i, int slot) {
    EXPECT_LT(slot, 4);
    checked.push_back(i);
    return absl::OkStatus();
  });
  EXPECT_EQ(r.requests, 10);
  EXPECT_EQ(r.latencies.count(), 10);
  EXPECT_EQ(fake.max_outstanding_, 4u);
  EXPECT_TRUE(fake.pending_.empty());
  EXPECT_EQ(checked, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(fake.issued_indices_, checked);
  EXPECT_FALSE(r.hit_max_requests);
}

TEST(RequestWindowTest, StopsAtMaxRequests) {
  FakeRequests fake;
  RequestWindowOptions options;
  options.inflight = 2;
  options.duration_s = 3600;
  options.max_requests = 5;
  RequestWindowResult r = MustRun(options, &fake, nullptr);
  EXPECT_EQ(r.requests, 5);
  EXPECT_TRUE(r.hit_max_requests);
}

TEST(RequestWindowTest, CheckFailureEndsRunAndDrainsOutstanding) {
  FakeRequests fake;
  RequestWindowOptions options;
  options.inflight = 3;
  options.iterations = 100;
  absl::StatusOr<RequestWindowResult> r = RunRequestWindow(
      options,
      [&](int64_t i, int slot, std::function<void()> done) {
        return fake.Issue(i, slot, std::move(done));
      },
      [&](int ts, absl::Duration t) { return fake.Wait(ts, t); },
      [](int64_t i, int) {
        return i == 5 ? absl::DataLossError("value 7 is 0, expected 2")
                      : absl::OkStatus();
      });
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(r.status().message().find("request 5: value 7"), std::string::npos)
      << r.status();
  EXPECT_TRUE(fake.pending_.empty());  // drained before returning
}

TEST(RequestWindowTest, WaitErrorIsReturned) {
  FakeRequests fake;
  fake.fail_ts_ = 102;
  RequestWindowOptions options;
  options.inflight = 1;
  options.iterations = 10;
  absl::StatusOr<RequestWindowResult> r = RunRequestWindow(
      options,
      [&](int64_t i, int slot, std::function<void()> done) {
        return fake.Issue(i, slot, std::move(done));
      },
      [&](int ts, absl::Duration t) { return fake.Wait(ts, t); }, nullptr);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(fake.issued_indices_.size(), 3u);
}

}  // namespace
}  // namespace petrel
