#include "tools/bench/latency_recorder.h"

#include "gtest/gtest.h"

namespace petrel {
namespace {

TEST(LatencyRecorderTest, EmptyReportsZero) {
  LatencyRecorder r;
  EXPECT_EQ(r.count(), 0);
  EXPECT_EQ(r.Mean(), 0);
  EXPECT_EQ(r.Percentile(50), 0);
  EXPECT_EQ(r.Percentile(99), 0);
}

TEST(LatencyRecorderTest, SingleSampleIsEveryPercentile) {
  LatencyRecorder r;
  r.Add(absl::Microseconds(42));
  EXPECT_EQ(r.count(), 1);
  EXPECT_DOUBLE_EQ(r.Mean(), 42);
  EXPECT_DOUBLE_EQ(r.Percentile(0), 42);
  EXPECT_DOUBLE_EQ(r.Percentile(50), 42);
  EXPECT_DOUBLE_EQ(r.Percentile(100), 42);
}

TEST(LatencyRecorderTest, PercentilesInterpolateBetweenRanks) {
  LatencyRecorder r;
  // Insert 1..100 µs in scrambled order.
  for (int i = 0; i < 100; ++i) r.AddNanos(((i * 37) % 100 + 1) * 1000);
  EXPECT_EQ(r.count(), 100);
  EXPECT_DOUBLE_EQ(r.Mean(), 50.5);
  EXPECT_DOUBLE_EQ(r.Percentile(0), 1);
  EXPECT_DOUBLE_EQ(r.Percentile(100), 100);
  EXPECT_DOUBLE_EQ(r.Percentile(50), 50.5);    // rank 49.5
  EXPECT_NEAR(r.Percentile(99), 99.01, 1e-9);  // rank 98.01
}

TEST(LatencyRecorderTest, ClampsOutOfRangeInputs) {
  LatencyRecorder r;
  r.AddNanos(-5);
  r.AddNanos(3000);
  EXPECT_DOUBLE_EQ(r.Percentile(-1), 0);
  EXPECT_DOUBLE_EQ(r.Percentile(250), 3);
}

TEST(LatencyRecorderTest, MergeAppendsSamples) {
  LatencyRecorder a;
  LatencyRecorder b;
  a.Add(absl::Microseconds(10));
  b.Add(absl::Microseconds(20));
  b.Add(absl::Microseconds(30));
  a.Merge(b);
  EXPECT_EQ(a.count(), 3);
  EXPECT_EQ(b.count(), 2);
  EXPECT_DOUBLE_EQ(a.Mean(), 20);
  EXPECT_DOUBLE_EQ(a.Percentile(50), 20);
}

TEST(LatencyRecorderTest, PercentileDoesNotDisturbLaterAdds) {
  LatencyRecorder r;
  for (int i = 10; i >= 1; --i) r.Add(absl::Microseconds(i));
  EXPECT_DOUBLE_EQ(r.Percentile(0), 1);
  r.Add(absl::Microseconds(0));
  EXPECT_DOUBLE_EQ(r.Percentile(0), 0);
  EXPECT_DOUBLE_EQ(r.Percentile(100), 10);
}

}  // namespace
}  // namespace petrel
