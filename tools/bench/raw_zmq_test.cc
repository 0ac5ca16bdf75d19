#include "tools/bench/raw_zmq.h"

#include "absl/status/status.h"
#include "gtest/gtest.h"

#include "tools/bench/internal/raw_zmq_acker.h"

namespace petrel {
namespace {

TEST(RawZmqTest, RunsFixedIterationsWithSeveralInFlight) {
  RawZmqOptions options;
  options.value_bytes = 64 << 10;
  options.inflight = 4;
  options.iterations = 200;
  options.progress_timeout = absl::Seconds(20);
  absl::StatusOr<BenchResult> result = RunRawZmq(options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->workload, "raw_zmq");
  EXPECT_EQ(result->value_bytes, 64 << 10);
  EXPECT_EQ(result->inflight, 4);
  EXPECT_EQ(result->worker_rank, 0);
  EXPECT_EQ(result->requests, 200);
  EXPECT_EQ(result->latencies.count(), 200);
  EXPECT_TRUE(result->verified);
  EXPECT_GT(result->seconds, 0);
}

TEST(RawZmqTest, RunsOverCurve) {
  RawZmqOptions options;
  options.value_bytes = 64 << 10;
  options.iterations = 20;
  options.curve = true;
  options.workload_name = "raw_zmq_curve";
  options.progress_timeout = absl::Seconds(20);
  absl::StatusOr<BenchResult> result = RunRawZmq(options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->requests, 20);
  EXPECT_TRUE(result->verified);
}

TEST(RawZmqTest, RunsForDurationAndCanRepeat) {
  RawZmqOptions options;
  options.value_bytes = 4;
  options.duration_s = 0.05;
  options.workload_name = "raw_zmq_latency";
  for (int run = 0; run < 2; ++run) {
    absl::StatusOr<BenchResult> result = RunRawZmq(options);
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->workload, "raw_zmq_latency");
    EXPECT_GT(result->requests, 0);
    EXPECT_EQ(result->latencies.count(), result->requests);
    EXPECT_TRUE(result->verified);
  }
}

TEST(RawZmqTest, RejectsBadOptions) {
  RawZmqOptions options;
  options.value_bytes = 0;
  EXPECT_EQ(RunRawZmq(options).status().code(),
            absl::StatusCode::kInvalidArgument);
  options = RawZmqOptions();
  options.inflight = 0;
  EXPECT_EQ(RunRawZmq(options).status().code(),
            absl::StatusCode::kInvalidArgument);
  options = RawZmqOptions();
  options.duration_s = 0;
  EXPECT_EQ(RunRawZmq(options).status().code(),
            absl::StatusCode::kInvalidArgument);
  options = RawZmqOptions();
  options.host = "";
  EXPECT_EQ(RunRawZmq(options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(RawZmqTest, UnbindableHostIsUnavailable) {
  RawZmqOptions options;
  options.host = "192.0.2.1";  // TEST-NET-1: not a local address.
  options.iterations = 1;
  options.progress_timeout = absl::Seconds(10);
  absl::StatusOr<BenchResult> result = RunRawZmq(options);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kUnavailable)
      << result.status();
  EXPECT_NE(result.status().message().find("zmq_bind"), std::string::npos)
      << result.status();
}

TEST(RawZmqTest, PayloadPatternCheckCatchesCorruption) {
  std::vector<uint8_t> buf(1000);
  internal::FillPayloadPattern(buf.data(), buf.size());
  EXPECT_TRUE(internal::PayloadPatternLooksRight(buf.data(), buf.size()));
  buf[999] ^= 1;
  EXPECT_FALSE(internal::PayloadPatternLooksRight(buf.data(), buf.size()));
  buf[999] ^= 1;
  buf[499] ^= 1;  // 999 * 8 / 16: the middle sample.
  EXPECT_FALSE(internal::PayloadPatternLooksRight(buf.data(), buf.size()));
}

}  // namespace
}  // namespace petrel
