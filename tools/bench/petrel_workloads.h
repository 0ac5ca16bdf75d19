// The Petrel workloads of petrel-bench: push, pull, pushpull and latency.
// For them petrel-bench is a worker node: PetrelBench joins the cluster
// (through NodeRuntime, with the settings of the shared node flags) the
// first time one of them runs, drives a KVWorker<float> (app 0, customer 0)
// against the job's servers (stock petrel-server, summing pushes), and
// ends the job with Postoffice::Finish.
//
// Each run draws fresh keys of its own (--key_dist, bench_keys.h) and
// sends the same request (those keys, the value pattern) every time, so
// the server's sums are known exactly and every run is verified
// (tools/bench/bench_verify.h). With repeated keys (zipf) one push adds,
// at each position, the pattern summed over the positions sharing its key
// ("base" below; the pattern itself when keys are distinct):
//   push      one warm-up push, the timed pushes, then a pull that must
//             return (1 + pushes) × base, every value checked.
//   pull      one push of the pattern, the timed pulls, each answer checked
//             at 64 spread positions, then a final pull checked fully.
//   pushpull  like push, but every answer must be the running sum
//             (k × base after the k-th push; 64 positions checked).
//   latency   push with 1 key, 1 float and 1 request in flight.
// Pushes stop early (with a warning) before sums would pass 2^24, where
// floats stop being exact: after about 5.6 M pushes of distinct keys,
// fewer when a key repeats (2^24 / the largest base value).
// A run that moved wrong data fails with DataLoss. With several workers
// the timed phase of every run is fenced by worker barriers, so the
// workers measure at the same time.
//
// Thread safety: not thread-safe; use from main's thread.

#ifndef PETREL_TOOLS_BENCH_PETREL_WORKLOADS_H_
#define PETREL_TOOLS_BENCH_PETREL_WORKLOADS_H_

#include <cstdint>
#include <memory>
#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

#include "kv/kv_worker.h"
#include "node/node_runtime.h"
#include "tools/bench/bench_result.h"
#include "tools/bench/workloads.h"

namespace petrel {

class PetrelBench {
 public:
  PetrelBench() = default;
  ~PetrelBench();
  PetrelBench(const PetrelBench&) = delete;
  PetrelBench& operator=(const PetrelBench&) = delete;

  // The node settings to join with, and the bound of every wait (one
  // request, a barrier, Finish). REQUIRES: called before the first run.
  void Configure(const NodeSettings& settings, absl::Duration timeout) {
    settings_ = settings;
    timeout_ = timeout;
  }

  // The workloads; each joins the cluster first if it has not yet.
  // FailedPrecondition without Configure; the join's errors; DataLoss when
  // the data did not verify; DeadlineExceeded naming a silent server.
  absl::StatusOr<BenchResult> RunPush(const WorkloadConfig& config);
  absl::StatusOr<BenchResult> RunPull(const WorkloadConfig& config);
  absl::StatusOr<BenchResult> RunPushPull(const WorkloadConfig& config);
  absl::StatusOr<BenchResult> RunLatency(const WorkloadConfig& config);

  // Runs `method`; with --io_cpu (the van's io_cpu) on the calling thread
  // pinned to that CPU, beside the van's I/O threads, for the run only.
  using RunMethod =
      absl::StatusOr<BenchResult> (PetrelBench::*)(const WorkloadConfig&);
  absl::StatusOr<BenchResult> Pinned(const WorkloadConfig& config,
                                     RunMethod method);

  // Whether this process joined a cluster.
  bool started() const { return runtime_ != nullptr; }
  // Reports this worker done, waits for the job's end and stops the node.
  // REQUIRES: started().
  absl::Status Finish();

 private:
  struct RunKeys;
  absl::Status EnsureStarted();
  absl::StatusOr<RunKeys> NewRun(const WorkloadConfig& config);
  absl::Status Barrier(const char* when);
  absl::Status WaitFor(int ts) { return kv_->Wait(ts, timeout_); }
  absl::Status PullAndCheck(const RunKeys& run, int64_t multiple);
  absl::StatusOr<BenchResult> RunPushes(const char* name,
                                        const WorkloadConfig& config);
  BenchResult MakeResult(const char* name, const WorkloadConfig& config) const;

  absl::Duration timeout_ = absl::Seconds(60);
  std::optional<NodeSettings> settings_;
  // Destroyed in reverse: the KVWorker leaves the Postoffice first.
  std::unique_ptr<NodeRuntime> runtime_;
  std::unique_ptr<KVWorker<float>> kv_;
  int64_t next_run_ = 0;
};

// InvalidArgument unless the config suits the Petrel workloads:
// value_bytes must split evenly into num_keys float arrays.
absl::Status ValidatePetrelConfig(const WorkloadConfig& config);

// Adds push, pull, pushpull and latency, run by `bench`, to `table`.
// `bench` must outlive the table's use.
void AddPetrelWorkloads(PetrelBench* bench, WorkloadTable* table);

}  // namespace petrel

#endif  // PETREL_TOOLS_BENCH_PETREL_WORKLOADS_H_
