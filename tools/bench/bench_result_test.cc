#include "tools/bench/bench_result.h"

#include "gtest/gtest.h"

namespace petrel {
namespace {

BenchResult MakeResult() {
  BenchResult r;
  r.workload = "push";
  r.value_bytes = 1048576;
  r.inflight = 1;
  r.worker_rank = 0;
  r.requests = 7725;
  r.seconds = 3.0;
  for (int i = 0; i < 99; ++i) r.latencies.Add(absl::Microseconds(380));
  r.latencies.Add(absl::Microseconds(520));
  r.verified = true;
  r.keys_per_request = 1000;
  return r;
}

TEST(BenchResultTest, FormatsStableLine) {
  EXPECT_EQ(FormatResultLine(MakeResult()),
            "workload=push value_bytes=1048576 inflight=1 worker=0 gbps=2.70 "
            "req_per_s=2575 p50_us=380 p99_us=381 requests=7725 "
            "seconds=3.000 verified=true keys=1000 keys_per_s=2575000");
}

TEST(BenchResultTest, ComputesRates) {
  BenchResult r = MakeResult();
  EXPECT_NEAR(ResultGigabytesPerSecond(r), 7725.0 * 1048576 / 3e9, 1e-9);
  EXPECT_NEAR(ResultRequestsPerSecond(r), 2575, 1e-9);
  EXPECT_NEAR(ResultKeysPerSecond(r), 2575000, 1e-6);
}

TEST(BenchResultTest, ZeroSecondsGivesZeroRates) {
  BenchResult r;
  r.workload = "raw_zmq";
  EXPECT_EQ(ResultGigabytesPerSecond(r), 0);
  EXPECT_EQ(ResultRequestsPerSecond(r), 0);
  EXPECT_EQ(ResultKeysPerSecond(r), 0);
  EXPECT_EQ(FormatResultLine(r),
            "workload=raw_zmq value_bytes=0 inflight=0 worker=0 gbps=0.00 "
            "req_per_s=0 p50_us=0 p99_us=0 requests=0 seconds=0.000 "
            "verified=false keys=0 keys_per_s=0");
}

TEST(BenchResultTest, LineHasNoNewline) {
  EXPECT_EQ(FormatResultLine(MakeResult()).find('\n'), std::string::npos);
}

}  // namespace
}  // namespace petrel
