// BenchResult is what one petrel-bench run of one workload measured, and
// FormatResultLine turns it into the stable one-line report that scripts
// parse:
//
//   workload=push value_bytes=1048576 inflight=1 worker=0 gbps=2.70
//   req_per_s=2575 p50_us=380 p99_us=520 requests=7725 seconds=3.000
//   verified=true keys=1 keys_per_s=2575
//
// (printed as one line). Keys and their order are part of the interface:
// add new keys at the end only.

#ifndef PETREL_TOOLS_BENCH_BENCH_RESULT_H_
#define PETREL_TOOLS_BENCH_BENCH_RESULT_H_

#include <cstdint>
#include <string>

#include "tools/bench/latency_recorder.h"

namespace petrel {

// A plain value; not synchronized.
struct BenchResult {
  std::string workload;       // Workload name, e.g. "push" or "raw_zmq".
  int64_t value_bytes = 0;    // Payload bytes carried by each request.
  int inflight = 0;           // Requests kept outstanding.
  int worker_rank = 0;        // Which worker measured this (0 for baselines).
  int64_t requests = 0;       // Completed (acknowledged) requests.
  double seconds = 0;         // Wall time from the first send to the last ack.
  LatencyRecorder latencies;  // One sample per completed request.
  bool verified = false;      // Every reply matched what was sent.
  // Keys carried by each request (0 for the raw_zmq baselines that carry
  // none).
  int64_t keys_per_request = 0;
};

// Payload bandwidth in GB/s (1e9 bytes per second): requests * value_bytes /
// seconds. Returns 0 when seconds <= 0.
double ResultGigabytesPerSecond(const BenchResult& result);

// Completed requests per second; 0 when seconds <= 0.
double ResultRequestsPerSecond(const BenchResult& result);

// keys_per_request * requests per second; 0 when seconds <= 0.
double ResultKeysPerSecond(const BenchResult& result);

// The stable report line shown above, without a trailing newline. gbps has
// two decimals, seconds three, req_per_s, keys_per_s and the percentiles (µs)
// are rounded to integers.
std::string FormatResultLine(const BenchResult& result);

}  // namespace petrel

#endif  // PETREL_TOOLS_BENCH_BENCH_RESULT_H_
