// petrel-bench: Petrel's system benchmark. One binary with named workloads;
// every run of a workload prints one stable line (tools/bench/bench_result.h)
// to stdout, e.g.
//
//   workload=raw_zmq value_bytes=1048576 inflight=1 worker=0 gbps=3.70
//   req_per_s=3529 p50_us=270 p99_us=420 requests=10587 seconds=3.000
//   verified=true
//
// Workloads (--workload takes a comma-separated list, run in that order):
//   raw_zmq          Raw ZeroMQ baseline: a DEALER sends --value_bytes per
//                    request (one reused zero-copy buffer) to a ROUTER in a
//                    forked process on TCP loopback, which acks each one;
//                    --inflight requests outstanding. Throughput baseline.
//   raw_zmq_latency  raw_zmq with 4-byte values and 1 request in flight:
//                    the round-trip latency baseline.
//   (push, pull, pushpull and latency, the Petrel workloads, are registered
//   in workloads.cc as they are added.)
//
// Flags: --workload, --value_bytes, --num_keys, --inflight, --duration_s,
// --iterations, --repeat (defaults and ranges below and in --help).
//
// Exit status: 0 when every run finished, 1 when a run failed, 2 for bad
// flags. Example (all on one line):
//
//   petrel-bench --workload=raw_zmq,raw_zmq_latency --value_bytes=1048576
//       --inflight=1 --duration_s=3 --repeat=3

#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gflags/gflags.h"
#include "glog/logging.h"

#include "tools/bench/flag_check.h"
#include "tools/bench/workloads.h"

DEFINE_string(workload, "raw_zmq",
              "Comma-separated workloads to run, in order (see the list "
              "below). Default raw_zmq.");
DEFINE_int64(value_bytes, 1048576,
             "Bytes per value. Default 1048576 (1 MiB); range [1, 2^30].");
DEFINE_int32(
    num_keys, 1,
    "Keys per request (Petrel workloads). Default 1; range [1, 2^20].");
DEFINE_int32(inflight, 1,
             "Requests kept outstanding. Default 1; range [1, 65536].");
DEFINE_double(duration_s, 3,
              "Seconds each run sends for when --iterations=0. Default 3; "
              "range (0, 86400].");
DEFINE_int64(iterations, 0,
             "Requests per run; 0 runs for --duration_s instead. Default 0.");
DEFINE_int32(repeat, 1,
             "Runs of each workload, each printing its own line. Default 1; "
             "range [1, 1000].");

namespace {

constexpr int kExitRunFailed = 1;
constexpr int kExitBadFlags = 2;

void LogNonDefaultFlags() {
  std::vector<gflags::CommandLineFlagInfo> flags;
  gflags::GetAllFlags(&flags);
  std::string line;
  for (const gflags::CommandLineFlagInfo& f : flags) {
    if (!f.is_default)
      absl::StrAppend(&line, " --", f.name, "=", f.current_value);
  }
  LOG(INFO) << "petrel-bench starting; non-default flags:" << line;
}

int BadFlags(const absl::Status& status) {
  std::fprintf(stderr, "petrel-bench: %s\n",
               std::string(status.message()).c_str());
  return kExitBadFlags;
}

}  // namespace

int main(int argc, char** argv) {
  const petrel::WorkloadTable table = petrel::BuiltinWorkloads();
  gflags::SetUsageMessage(absl::StrCat(
      "petrel-bench [flags]: Petrel system benchmark; one result line per "
      "run.\nWorkloads:\n",
      petrel::DescribeWorkloads(table)));
  if (absl::Status s = petrel::CheckCommandLineFlags(argc, argv); !s.ok()) {
    return BadFlags(s);
  }
  gflags::ParseCommandLineFlags(&argc, &argv, /*remove_flags=*/true);
  google::InitGoogleLogging(argv[0]);
  if (argc > 1) {
    return BadFlags(absl::InvalidArgumentError(
        absl::StrCat("unexpected argument \"", argv[1], "\"")));
  }
  const petrel::WorkloadConfig config = {FLAGS_value_bytes, FLAGS_num_keys,
                                         FLAGS_inflight, FLAGS_duration_s,
                                         FLAGS_iterations};
  if (absl::Status s = petrel::ValidateWorkloadConfig(config); !s.ok()) {
    return BadFlags(s);
  }
  if (FLAGS_repeat < 1 || FLAGS_repeat > 1000) {
    return BadFlags(absl::InvalidArgumentError(
        absl::StrCat("--repeat=", FLAGS_repeat, " is not in [1, 1000]")));
  }
  absl::StatusOr<std::vector<std::string>> names =
      petrel::ParseWorkloadList(FLAGS_workload, table);
  if (!names.ok()) return BadFlags(names.status());
  LogNonDefaultFlags();

  for (const std::string& name : *names) {
    for (int run = 1; run <= FLAGS_repeat; ++run) {
      absl::StatusOr<petrel::BenchResult> result = table.at(name).run(config);
      if (!result.ok()) {
        std::fprintf(stderr, "petrel-bench: workload %s run %d failed: %s\n",
                     name.c_str(), run, result.status().ToString().c_str());
        return kExitRunFailed;
      }
      std::printf("%s\n", petrel::FormatResultLine(*result).c_str());
      std::fflush(stdout);
    }
  }
  return 0;
}
