// LatencyRecorder collects per-request latencies for petrel-bench and reports
// their mean and percentiles. Samples are kept exactly (8 bytes each), so a
// three-second run at ~100 µs per request holds about 30,000 of them.

#ifndef PETREL_TOOLS_BENCH_LATENCY_RECORDER_H_
#define PETREL_TOOLS_BENCH_LATENCY_RECORDER_H_

#include <chrono>
#include <cstdint>
#include <vector>

#include "absl/time/time.h"

namespace petrel {

// The steady clock in nanoseconds: the time base of the benchmark drivers'
// AddNanos() samples. Thread-safe.
inline int64_t SteadyNowNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Thread-safety: not thread-safe. Give each thread its own recorder and
// Merge() them afterwards. Copyable and movable (it is a value type).
class LatencyRecorder {
 public:
  LatencyRecorder() = default;

  // Records one sample. Negative durations are clamped to zero.
  void Add(absl::Duration latency);
  void AddNanos(int64_t nanos);

  // Appends all samples of `other` to this recorder.
  void Merge(const LatencyRecorder& other);

  // Number of samples recorded.
  int64_t count() const { return static_cast<int64_t>(samples_ns_.size()); }

  // Mean latency in microseconds; 0 when there are no samples.
  double Mean() const;

  // The p-th percentile in microseconds, interpolated linearly between the
  // two nearest ranks (numpy's default). p is clamped to [0, 100]; p=0 is the
  // minimum and p=100 the maximum. Returns 0 when there are no samples.
  // Costs O(count()) per call.
  double Percentile(double p) const;

 private:
  std::vector<int64_t> samples_ns_;
};

}  // namespace petrel

#endif  // PETREL_TOOLS_BENCH_LATENCY_RECORDER_H_
