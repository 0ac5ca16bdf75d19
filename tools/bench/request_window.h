// RunRequestWindow: the closed-loop driver of petrel-bench's Petrel
// workloads. It keeps up to `inflight` requests outstanding, issuing each
// from the calling thread as an application would, waits for the oldest,
// checks it, and issues the next one, until `iterations` requests completed
// or `duration_s` passed (requests still outstanding then are waited for
// and counted, as in the raw ZeroMQ baseline). A request's latency runs
// from just before it is issued to its completion callback.
//
// It is independent of KVWorker (requests are issued and waited for through
// callbacks), so it can be tested without a cluster.

#ifndef PETREL_TOOLS_BENCH_REQUEST_WINDOW_H_
#define PETREL_TOOLS_BENCH_REQUEST_WINDOW_H_

#include <cstdint>
#include <functional>
#include <limits>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

#include "tools/bench/latency_recorder.h"

namespace petrel {

struct RequestWindowOptions {
  // Requests kept outstanding; >= 1.
  int inflight = 1;
  // Requests to complete; 0 runs for duration_s instead.
  int64_t iterations = 0;
  // Seconds to keep issuing when iterations == 0.
  double duration_s = 3;
  // Never issue more than this many requests (a run for duration_s stops
  // early when it reaches it). Default: no limit.
  int64_t max_requests = std::numeric_limits<int64_t>::max();
  // Longest wait for one request.
  absl::Duration timeout = absl::Seconds(60);
  // Issue from completion callbacks (see request_chain.h). Default false.
  bool issue_from_callbacks = false;
};

// Issues request number `index` (0, 1, ...) using window slot `slot` (in
// [0, inflight); a slot is reused only after its request was checked) and
// returns the request's timestamp. `done` must be called once, on any
// thread, when the request completes.
using IssueFn =
    std::function<int(int64_t index, int slot, std::function<void()> done)>;
// Waits up to `timeout` for the request with timestamp `ts`; returns its
// status. Called on the driver's thread.
using WaitFn = std::function<absl::Status(int ts, absl::Duration timeout)>;
// Checks completed request `index` that used `slot`; a non-OK status ends
// the run with that error. May be null.
using CheckFn = std::function<absl::Status(int64_t index, int slot)>;

struct RequestWindowResult {
  int64_t requests = 0;  // completed and checked
  double seconds = 0;    // first issue to last completion
  LatencyRecorder latencies;
  bool hit_max_requests = false;  // stopped early at max_requests
};

// Runs the window on the calling thread. Returns the first error of `wait`
// or `check` (annotated with the request index); before returning an error
// it waits (up to `timeout` each) for the requests still outstanding, so
// that the callers' per-slot state may be freed afterwards.
// Sets result->hit_max_requests and result->seconds (first issue at
// `start_ns` to the last completion) once a run ended; shared by the drivers.
void FinishRequestResult(const RequestWindowOptions& options, int64_t issued,
                         int64_t start_ns, int64_t last_done_ns,
                         RequestWindowResult* result);

absl::StatusOr<RequestWindowResult> RunRequestWindow(
    const RequestWindowOptions& options, const IssueFn& issue,
    const WaitFn& wait, const CheckFn& check);

}  // namespace petrel

#endif  // PETREL_TOOLS_BENCH_REQUEST_WINDOW_H_
