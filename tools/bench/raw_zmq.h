// The raw ZeroMQ baseline of petrel-bench: what a bare DEALER -> ROUTER
// exchange between two processes on TCP loopback achieves, with none of
// Petrel's layers. Petrel's push/pull numbers are read as a ratio to it.
//
// RunRawZmq forks an "acker" child process that binds a ROUTER socket and
// answers every message with an 8-byte ack. The parent's DEALER sends one
// reused zero-copy buffer of value_bytes, keeps `inflight` requests
// outstanding and times each request from its send to its ack. With
// value_bytes=4 and inflight=1 this is the round-trip latency baseline; with
// 1 MiB and more it is the throughput baseline.

#ifndef PETREL_TOOLS_BENCH_RAW_ZMQ_H_
#define PETREL_TOOLS_BENCH_RAW_ZMQ_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

#include "tools/bench/bench_result.h"

namespace petrel {

struct RawZmqOptions {
  // Payload bytes per request. Default 1 MiB; range [1, 1 GiB].
  int64_t value_bytes = 1 << 20;
  // Requests kept outstanding. Default 1; range [1, 65536].
  int inflight = 1;
  // Requests to complete; 0 means run for duration_s instead. Default 0.
  int64_t iterations = 0;
  // Seconds to keep sending when iterations == 0; requests still in flight
  // at the end are drained and counted. Default 3; range (0, 86400].
  double duration_s = 3;
  // Numeric IPv4/IPv6 address the acker binds to and the DEALER connects to.
  // Default "127.0.0.1".
  std::string host = "127.0.0.1";
  // Longest wait for any progress (the acker's start-up, an ack, the acker's
  // exit) before the run fails with DeadlineExceeded. Default 30 s; > 0.
  absl::Duration progress_timeout = absl::Seconds(30);
  // Untimed requests sent (one at a time) before measuring, to set up the
  // TCP connection and warm both processes. Default 2; >= 0.
  int warmup_requests = 2;
  // Name reported in BenchResult::workload. Default "raw_zmq".
  std::string workload_name = "raw_zmq";
  // Both ends use ZeroMQ's CURVE security with keypairs made for the run
  // (the acker admits any client: no ZAP handler). Default false.
  bool curve = false;
};

// Runs the baseline and returns its result (worker_rank 0). `verified` is
// true when every ack reported the full value_bytes and the acker saw the
// expected payload pattern.
//
// REQUIRES: the calling process has no other threads that could hold a lock
// at fork() time which the child needs (malloc is fine under glibc). The
// child never returns into the caller: it _exit()s.
//
// Errors: InvalidArgument for options out of range; Internal or Unavailable
// for fork/socket/ZeroMQ failures (with zmq_strerror text) or an acker that
// died; DeadlineExceeded when no progress was made for progress_timeout.
// The child is always reaped before this returns.
absl::StatusOr<BenchResult> RunRawZmq(const RawZmqOptions& options);

}  // namespace petrel

#endif  // PETREL_TOOLS_BENCH_RAW_ZMQ_H_
