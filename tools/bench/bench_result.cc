#include "tools/bench/bench_result.h"

#include "absl/strings/str_format.h"

namespace petrel {

double ResultGigabytesPerSecond(const BenchResult& result) {
  if (!(result.seconds > 0)) return 0;
  return static_cast<double>(result.requests) *
         static_cast<double>(result.value_bytes) / 1e9 / result.seconds;
}

double ResultRequestsPerSecond(const BenchResult& result) {
  if (!(result.seconds > 0)) return 0;
  return static_cast<double>(result.requests) / result.seconds;
}

double ResultKeysPerSecond(const BenchResult& result) {
  return static_cast<double>(result.keys_per_request) *
         ResultRequestsPerSecond(result);
}

std::string FormatResultLine(const BenchResult& result) {
  return absl::StrFormat(
      "workload=%s value_bytes=%d inflight=%d worker=%d gbps=%.2f "
      "req_per_s=%.0f p50_us=%.0f p99_us=%.0f requests=%d seconds=%.3f "
      "verified=%s keys=%d keys_per_s=%.0f",
      result.workload, result.value_bytes, result.inflight, result.worker_rank,
      ResultGigabytesPerSecond(result), ResultRequestsPerSecond(result),
      result.latencies.Percentile(50), result.latencies.Percentile(99),
      result.requests, result.seconds, result.verified ? "true" : "false",
      result.keys_per_request, ResultKeysPerSecond(result));
}

}  // namespace petrel
