#include "tools/bench/petrel_workloads.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

#include "base/cpu_affinity.h"
#include "base/status_macros.h"
#include "cluster/postoffice.h"
#include "tools/bench/bench_keys.h"
#include "tools/bench/bench_verify.h"
#include "tools/bench/request_chain.h"
#include "tools/bench/request_window.h"
#include "van/message.h"

namespace petrel {
namespace {

constexpr int64_t kMaxRuns = int64_t{1} << 20;
constexpr int64_t kMaxKeys = int64_t{1} << 20;
// The latency workload: one float under one key, one request in flight.
constexpr int64_t kLatencyValueBytes = sizeof(float);

RequestWindowOptions WindowOptions(const WorkloadConfig& config,
                                   absl::Duration timeout,
                                   int64_t max_requests) {
  RequestWindowOptions options;
  options.inflight = config.inflight;
  options.iterations = config.iterations;
  options.duration_s = config.duration_s;
  options.max_requests = max_requests;
  options.timeout = timeout;
  options.issue_from_callbacks = config.issue_from_callbacks;
  return options;
}

// The main-thread window, or the callback chain for asynchronous clients.
absl::StatusOr<RequestWindowResult> RunRequests(
    const RequestWindowOptions& options, const IssueFn& issue,
    const WaitFn& wait, const CheckFn& check) {
  if (options.issue_from_callbacks)
    return RunRequestChain(options, issue, check);
  return RunRequestWindow(options, issue, wait, check);
}

void WarnIfCapped(const RequestWindowResult& window, const char* name) {
  if (window.hit_max_requests) {
    LOG(WARNING) << name << " stopped early after " << window.requests
                 << " requests: more would make the float sums inexact";
  }
}

}  // namespace

// The keys and values of one run.
struct PetrelBench::RunKeys {
  SArray<Key> keys;
  SArray<float> vals;  // the pattern, value_bytes / 4 floats
  // What one push of `vals` adds at each pulled position (`vals` itself
  // unless keys repeat), and the most pushes whose sums stay exact.
  SArray<float> base;
  int64_t max_multiple = kMaxExactMultiple;
};

PetrelBench::~PetrelBench() {
  kv_.reset();
  runtime_.reset();
}

absl::Status PetrelBench::EnsureStarted() {
  if (runtime_ != nullptr) return absl::OkStatus();
  if (!settings_.has_value()) {
    return absl::FailedPreconditionError("no node settings configured");
  }
  runtime_ = std::make_unique<NodeRuntime>(*settings_);
  kv_ = std::make_unique<KVWorker<float>>(/*app_id=*/0, /*customer_id=*/0,
                                          runtime_->postoffice());
  PETREL_RETURN_IF_ERROR(kv_->Start());
  return runtime_->Start();
}

absl::StatusOr<BenchResult> PetrelBench::Pinned(const WorkloadConfig& config,
                                                RunMethod method) {
  if (!settings_.has_value() || settings_->van.io_cpu < 0) {
    return (this->*method)(config);
  }
  // Joined first, so that the node's own threads keep the process's CPUs;
  // the pin ends with the run, so that a raw baseline runs unpinned.
  PETREL_RETURN_IF_ERROR(EnsureStarted());
  ScopedCpuPin pin(settings_->van.io_cpu);
  PETREL_RETURN_IF_ERROR(pin.status());
  return (this->*method)(config);
}

absl::Status PetrelBench::Finish() {
  absl::Status status = runtime_->postoffice()->Finish(timeout_);
  kv_.reset();
  runtime_->Stop();
  return Annotate(status, "finishing the job");
}

absl::Status PetrelBench::Barrier(const char* when) {
  return Annotate(runtime_->postoffice()->Barrier(kWorkerGroup, timeout_),
                  absl::StrCat("worker barrier ", when));
}

absl::StatusOr<PetrelBench::RunKeys> PetrelBench::NewRun(
    const WorkloadConfig& config) {
  PETREL_RETURN_IF_ERROR(EnsureStarted());
  PETREL_RETURN_IF_ERROR(ValidatePetrelConfig(config));
  PETREL_RETURN_IF_ERROR(ValidateKeyDrawOptions(KeyDrawOptionsOf(config)));
  if (next_run_ >= kMaxRuns) {
    return absl::ResourceExhaustedError(
        absl::StrCat("more than ", kMaxRuns, " runs in one process"));
  }
  const int64_t run = next_run_++;
  kv_->set_max_push_part_bytes(static_cast<size_t>(config.max_push_part_bytes));
  kv_->set_split_large_keys(config.split_large_keys);
  kv_->set_max_pull_part_bytes(static_cast<size_t>(config.max_pull_part_bytes));
  const int rank = runtime_->postoffice()->my_rank();
  RunKeys out;
  PETREL_ASSIGN_OR_RETURN(out.keys,
                          DrawRunKeys(KeyDrawOptionsOf(config), rank, run));
  out.vals =
      MakePattern(static_cast<size_t>(config.value_bytes) / sizeof(float));
  out.base = PushSumsPerPosition(out.keys, out.vals);
  out.max_multiple = MaxExactMultipleOf(out.base);
  return out;
}

absl::Status PetrelBench::PullAndCheck(const RunKeys& run, int64_t multiple) {
  SArray<float> got;
  PETREL_RETURN_IF_ERROR(
      Annotate(WaitFor(kv_->Pull(run.keys, &got)), "verification pull"));
  return Annotate(
      CheckMultipleOf(got, run.base, multiple, CheckMode::kFull),
      absl::StrCat("after ", multiple, " pushes of the pattern, pull"));
}

BenchResult PetrelBench::MakeResult(const char* name,
                                    const WorkloadConfig& config) const {
  BenchResult result;
  result.workload = name;
  result.value_bytes = config.value_bytes;
  result.inflight = config.inflight;
  result.worker_rank = runtime_->postoffice()->my_rank();
  result.keys_per_request = config.num_keys;
  return result;
}

absl::StatusOr<BenchResult> PetrelBench::RunPushes(
    const char* name, const WorkloadConfig& config) {
  PETREL_ASSIGN_OR_RETURN(RunKeys run, NewRun(config));
  // Warm-up: the first push creates the server's rows (and connections).
  PETREL_RETURN_IF_ERROR(
      Annotate(WaitFor(kv_->Push(run.keys, run.vals)), "warm-up push"));
  PETREL_RETURN_IF_ERROR(Barrier("before the timed pushes"));
  IssueFn issue = [&](int64_t, int, std::function<void()> done) {
    return kv_->Push(run.keys, run.vals, {}, 0, std::move(done));
  };
  WaitFn wait = [&](int ts, absl::Duration t) { return kv_->Wait(ts, t); };
  PETREL_ASSIGN_OR_RETURN(
      RequestWindowResult window,
      RunRequests(WindowOptions(config, timeout_, run.max_multiple - 1), issue,
                  wait, nullptr));
  WarnIfCapped(window, name);
  PETREL_RETURN_IF_ERROR(Barrier("after the timed pushes"));
  PETREL_RETURN_IF_ERROR(PullAndCheck(run, 1 + window.requests));
  BenchResult result = MakeResult(name, config);
  result.requests = window.requests;
  result.seconds = window.seconds;
  result.latencies = std::move(window.latencies);
  result.verified = true;
  return result;
}

absl::StatusOr<BenchResult> PetrelBench::RunPush(const WorkloadConfig& config) {
  return RunPushes("push", config);
}

absl::StatusOr<BenchResult> PetrelBench::RunLatency(
    const WorkloadConfig& config) {
  WorkloadConfig pinned = config;
  pinned.value_bytes = kLatencyValueBytes;
  pinned.num_keys = 1;
  pinned.inflight = 1;
  return RunPushes("latency", pinned);
}

absl::StatusOr<BenchResult> PetrelBench::RunPull(const WorkloadConfig& config) {
  PETREL_ASSIGN_OR_RETURN(RunKeys run, NewRun(config));
  // The keys are fresh, so this push sets them to the pattern.
  PETREL_RETURN_IF_ERROR(
      Annotate(WaitFor(kv_->Push(run.keys, run.vals)), "initial push"));
  PETREL_RETURN_IF_ERROR(Barrier("before the timed pulls"));
  // An empty output array lets KVWorker hand back the received buffer
  // itself instead of copying into ours.
  std::vector<SArray<float>> outs(config.inflight);
  IssueFn issue = [&](int64_t, int slot, std::function<void()> done) {
    outs[slot] = SArray<float>();
    return kv_->Pull(run.keys, &outs[slot], nullptr, 0, std::move(done));
  };
  WaitFn wait = [&](int ts, absl::Duration t) { return kv_->Wait(ts, t); };
  CheckFn check = [&](int64_t, int slot) {
    absl::Status s =
        CheckMultipleOf(outs[slot], run.base, 1, CheckMode::kSampled);
    outs[slot] = SArray<float>();  // give the received message back now
    return s;
  };
  PETREL_ASSIGN_OR_RETURN(
      RequestWindowResult window,
      RunRequests(
          WindowOptions(config, timeout_, std::numeric_limits<int64_t>::max()),
          issue, wait, check));
  PETREL_RETURN_IF_ERROR(Barrier("after the timed pulls"));
  PETREL_RETURN_IF_ERROR(PullAndCheck(run, 1));
  BenchResult result = MakeResult("pull", config);
  result.requests = window.requests;
  result.seconds = window.seconds;
  result.latencies = std::move(window.latencies);
  result.verified = true;
  return result;
}

absl::StatusOr<BenchResult> PetrelBench::RunPushPull(
    const WorkloadConfig& config) {
  PETREL_ASSIGN_OR_RETURN(RunKeys run, NewRun(config));
  PETREL_RETURN_IF_ERROR(
      Annotate(WaitFor(kv_->Push(run.keys, run.vals)), "warm-up push"));
  PETREL_RETURN_IF_ERROR(Barrier("before the timed push-pulls"));
  std::vector<SArray<float>> outs(config.inflight);
  IssueFn issue = [&](int64_t, int slot, std::function<void()> done) {
    outs[slot] = SArray<float>();
    return kv_->PushPull(run.keys, run.vals, &outs[slot], nullptr, 0,
                         std::move(done));
  };
  WaitFn wait = [&](int ts, absl::Duration t) { return kv_->Wait(ts, t); };
  // Requests are issued from one thread, so every server applies them in
  // issue order: request i (from 0) answers with the sum of 2 + i pushes.
  CheckFn check = [&](int64_t index, int slot) {
    absl::Status s =
        CheckMultipleOf(outs[slot], run.base, 2 + index, CheckMode::kSampled);
    outs[slot] = SArray<float>();
    return s;
  };
  PETREL_ASSIGN_OR_RETURN(
      RequestWindowResult window,
      RunRequests(WindowOptions(config, timeout_, run.max_multiple - 1), issue,
                  wait, check));
  WarnIfCapped(window, "pushpull");
  PETREL_RETURN_IF_ERROR(Barrier("after the timed push-pulls"));
  PETREL_RETURN_IF_ERROR(PullAndCheck(run, 1 + window.requests));
  BenchResult result = MakeResult("pushpull", config);
  result.requests = window.requests;
  result.seconds = window.seconds;
  result.latencies = std::move(window.latencies);
  result.verified = true;
  return result;
}

absl::Status ValidatePetrelConfig(const WorkloadConfig& config) {
  const int64_t per_key_bytes =
      static_cast<int64_t>(sizeof(float)) * config.num_keys;
  if (config.num_keys < 1 || config.num_keys > kMaxKeys) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--num_keys=", config.num_keys, " is not in [1, ", kMaxKeys, "]"));
  }
  if (config.value_bytes % per_key_bytes != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--value_bytes=", config.value_bytes,
        " does not split into --num_keys=", config.num_keys,
        " arrays of floats (it must be a multiple of ", per_key_bytes, ")"));
  }
  return absl::OkStatus();
}

void AddPetrelWorkloads(PetrelBench* bench, WorkloadTable* table) {
  auto entry = [bench](const char* description, auto method) {
    Workload w;
    w.description = description;
    w.run = [bench, method](const WorkloadConfig& config) {
      return bench->Pinned(config, method);
    };
    w.needs_cluster = true;
    return w;
  };
  (*table)["push"] = entry(
      "Petrel push: --value_bytes per request over --num_keys keys, "
      "--inflight outstanding; verified by a pull",
      &PetrelBench::RunPush);
  (*table)["pull"] = entry(
      "Petrel pull of --value_bytes per request over --num_keys keys; "
      "every answer checked",
      &PetrelBench::RunPull);
  (*table)["pushpull"] = entry(
      "Petrel push-pull (push, answer the running sums) of --value_bytes "
      "per request; every answer checked",
      &PetrelBench::RunPushPull);
  (*table)["latency"] = entry(
      "Petrel push round trip of 1 float under 1 key, 1 in flight (ignores "
      "--value_bytes, --num_keys and --inflight)",
      &PetrelBench::RunLatency);
}

}  // namespace petrel
