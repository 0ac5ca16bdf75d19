#include "tools/bench/latency_recorder.h"

#include <algorithm>
#include <cmath>

namespace petrel {

void LatencyRecorder::Add(absl::Duration latency) {
  AddNanos(absl::ToInt64Nanoseconds(latency));
}

void LatencyRecorder::AddNanos(int64_t nanos) {
  samples_ns_.push_back(std::max<int64_t>(nanos, 0));
}

void LatencyRecorder::Merge(const LatencyRecorder& other) {
  samples_ns_.insert(samples_ns_.end(), other.samples_ns_.begin(),
                     other.samples_ns_.end());
}

double LatencyRecorder::Mean() const {
  if (samples_ns_.empty()) return 0;
  // Sum in double: int64 nanoseconds could overflow only after ~292 years of
  // total latency, but double keeps the code obviously safe.
  double sum_ns = 0;
  for (int64_t s : samples_ns_) sum_ns += static_cast<double>(s);
  return sum_ns / static_cast<double>(samples_ns_.size()) / 1e3;
}

double LatencyRecorder::Percentile(double p) const {
  if (samples_ns_.empty()) return 0;
  if (!(p > 0)) p = 0;  // Also maps NaN to 0.
  if (p > 100) p = 100;
  // nth_element on a copy keeps Percentile() const and O(n); the recorder is
  // read a few times per run, so sorting once and caching would not pay off.
  std::vector<int64_t> v = samples_ns_;
  const double rank = p / 100.0 * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const double frac = rank - static_cast<double>(lo);
  std::nth_element(v.begin(), v.begin() + lo, v.end());
  const double lo_value = static_cast<double>(v[lo]);
  if (frac == 0 || lo + 1 >= v.size()) return lo_value / 1e3;
  // After nth_element everything right of lo is >= v[lo]; the next rank is
  // the smallest of them.
  const double hi_value =
      static_cast<double>(*std::min_element(v.begin() + lo + 1, v.end()));
  return (lo_value + frac * (hi_value - lo_value)) / 1e3;
}

}  // namespace petrel
