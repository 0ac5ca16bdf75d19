// RunRequestChain: petrel-bench's driver for asynchronous clients. It keeps
// `inflight` requests outstanding by issuing each next request from the
// completion callback of the one before (for KVWorker that callback runs on
// the van's I/O thread, whose sends go straight to the socket), so a request
// costs no thread hand-off on the client. Latency runs from just before a
// request is issued to its completion callback. Requests are checked in the
// callback; the per-request status of `wait` is not consulted (a lost or
// failed request shows in the workload's final verification instead).
#ifndef PETREL_TOOLS_BENCH_REQUEST_CHAIN_H_
#define PETREL_TOOLS_BENCH_REQUEST_CHAIN_H_

#include "tools/bench/request_window.h"

namespace petrel {

// Runs the chain until `options.iterations` requests completed or
// `options.duration_s` passed. `issue` and `check` must stay valid until it
// returns. DeadlineExceeded when requests stop completing for longer than
// `options.timeout`.
absl::StatusOr<RequestWindowResult> RunRequestChain(
    const RequestWindowOptions& options, const IssueFn& issue,
    const CheckFn& check);

}  // namespace petrel

#endif  // PETREL_TOOLS_BENCH_REQUEST_CHAIN_H_
