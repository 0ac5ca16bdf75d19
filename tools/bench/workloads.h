// The workload table of petrel-bench: each named workload is a function that
// runs once with a WorkloadConfig and returns one BenchResult. bench_main.cc
// looks names up here; add a workload by registering it in
// BuiltinWorkloads() (workloads.cc).

#ifndef PETREL_TOOLS_BENCH_WORKLOADS_H_
#define PETREL_TOOLS_BENCH_WORKLOADS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

#include "tools/bench/bench_keys.h"
#include "tools/bench/bench_result.h"

namespace petrel {

// What the flags ask every workload to do; a workload may pin some fields
// (raw_zmq_latency always uses 4 bytes and one request in flight).
struct WorkloadConfig {
  // Payload bytes per request, spread evenly over num_keys keys in the
  // Petrel workloads. With dim >= 1 it is num_keys * dim * 4 (ApplyDim).
  // Default 1 MiB; range [1, 1 GiB].
  int64_t value_bytes = 1 << 20;
  // Keys per request; unused by raw_zmq and raw_zmq_latency. Default 1;
  // range [1, 1048576].
  int num_keys = 1;
  // Floats per key; 0 leaves the request size to value_bytes. Default 0;
  // range [0, 2^28], with num_keys * dim * 4 <= 1 GiB.
  int64_t dim = 0;
  // Petrel workloads: how a run draws its keys (tools/bench/bench_keys.h).
  // Default sequential.
  KeyDist key_dist = KeyDist::kSequential;
  // uniform and zipf: key numbers are drawn from [0, key_space). Default
  // 10^8; range [1, 2^32] (uniform: >= num_keys).
  int64_t key_space = 100000000;
  // zipf: the exponent. Default 1.1; range (0, 10].
  double zipf_exponent = 1.1;
  // Petrel workloads: the KVWorker's max_push_part_bytes (a push to one
  // server above it is sent in parts split at key boundaries); 0 never
  // splits. Default 1 MiB; range [0, 1 GiB].
  int64_t max_push_part_bytes = int64_t{1} << 20;
  // Petrel workloads: the KVWorker's max_pull_part_bytes (a pull whose
  // answer from one server should exceed it is sent in parts); 0 never
  // splits. Default 1 MiB; range [0, 1 GiB].
  int64_t max_pull_part_bytes = int64_t{1} << 20;
  // Petrel workloads: the KVWorker's split_large_keys (a key whose values
  // exceed max_push_part_bytes is pushed in slices; petrel-server's store
  // takes them). Default true.
  bool split_large_keys = true;
  // Requests kept outstanding. Default 1; range [1, 65536].
  int inflight = 1;
  // Seconds to run when iterations == 0. Default 3; range (0, 86400].
  double duration_s = 3;
  // Requests to complete; 0 means run for duration_s. Default 0; >= 0.
  int64_t iterations = 0;
  // Petrel workloads: issue each next request from the previous one's
  // completion callback (an asynchronous client) instead of the main
  // thread. Default false.
  bool issue_from_callbacks = false;
  // The raw ZeroMQ baselines run with CURVE (keypairs made for the run) and
  // report their workload name with "_curve" appended. The Petrel
  // workloads use CURVE when the node has keys (petrel-launch --curve).
  // Default false.
  bool curve = false;
};

// Runs one workload once. Called on main's thread; may fork or start threads
// but must reap and join them before it returns.
using WorkloadFn =
    std::function<absl::StatusOr<BenchResult>(const WorkloadConfig&)>;

struct Workload {
  std::string description;  // One line, shown by --help.
  WorkloadFn run;
  // Whether the workload runs against a Petrel cluster (petrel-bench then
  // joins one as a worker) rather than standing alone.
  bool needs_cluster = false;
};

// Workload name -> workload, sorted by name.
using WorkloadTable = std::map<std::string, Workload>;

// Builds the table of the workloads that need no cluster (the raw ZeroMQ
// baselines); AddPetrelWorkloads (petrel_workloads.h) adds the others. A
// fresh table each call; there is no global registry.
WorkloadTable BuiltinWorkloads();

// InvalidArgument naming the flag and its value when a field is out of the
// range documented on WorkloadConfig.
absl::Status ValidateWorkloadConfig(const WorkloadConfig& config);

// With config->dim >= 1, sets value_bytes to num_keys * dim * 4. When
// --value_bytes was also given (`value_bytes_given`) it must equal that
// product: InvalidArgument naming both flags otherwise, or when dim is out
// of range or the product is over 1 GiB. Does nothing when dim is 0.
absl::Status ApplyDim(bool value_bytes_given, WorkloadConfig* config);

// The KeyDrawOptions of the config's key flags.
KeyDrawOptions KeyDrawOptionsOf(const WorkloadConfig& config);

// Splits a comma-separated --workload value ("raw_zmq,raw_zmq_latency") into
// names, in order, duplicates kept. InvalidArgument when the list is empty,
// has an empty item, or names a workload not in `table`.
absl::StatusOr<std::vector<std::string>> ParseWorkloadList(
    absl::string_view list, const WorkloadTable& table);

// "  name  description\n" for every workload, for the usage message.
std::string DescribeWorkloads(const WorkloadTable& table);

}  // namespace petrel

#endif  // PETREL_TOOLS_BENCH_WORKLOADS_H_
