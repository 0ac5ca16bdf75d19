// petrel-bench: Petrel's system benchmark. One binary with named workloads;
// every run of a workload prints one stable line (tools/bench/bench_result.h)
// to stdout, e.g.
//
//   workload=push value_bytes=1048576 inflight=1 worker=0 gbps=3.70
//   req_per_s=3529 p50_us=270 p99_us=420 requests=10587 seconds=3.000
//   verified=true keys=1 keys_per_s=3529
//
// Workloads (--workload takes a comma-separated list, run in that order):
//   raw_zmq          Raw ZeroMQ baseline: a DEALER sends --value_bytes per
//                    request (one reused zero-copy buffer) to a ROUTER in a
//                    forked process on TCP loopback, which acks each one;
//                    --inflight requests outstanding. Throughput baseline.
//   raw_zmq_kv       raw_zmq moving the bytes of a Petrel request: the
//                    --num_keys 8-byte keys plus --value_bytes (or --dim)
//                    of values in one message per request; its line's
//                    value_bytes is that sum and keys_per_s counts
//                    --num_keys per request, so a Petrel line's keys_per_s
//                    over its keys_per_s is the ratio to raw ZeroMQ moving
//                    the same bytes.
//   raw_zmq_latency  raw_zmq with 4-byte values and 1 request in flight:
//                    the round-trip latency baseline.
//   push, pull, pushpull, latency
//                    Petrel itself (tools/bench/petrel_workloads.h): the
//                    bench joins a cluster as a worker (--scheduler=HOST:PORT
//                    or the DMLC_* variables, like any node) the first time
//                    one of them runs, verifies every run, and finishes the
//                    job at the end. The baselines need no cluster; they fork,
//                    so list them before the Petrel workloads.
//
// Flags: --workload, --value_bytes, --num_keys, --dim, --key_dist,
// --key_space, --zipf_exponent, --inflight, --duration_s, --iterations,
// --repeat, --wait_timeout_s, and the node flags (node/node_flags.cc);
// defaults and ranges in --help. Request size: --value_bytes bytes of
// values over --num_keys keys, or, with --dim=D, --num_keys × D floats
// (--value_bytes may then be left out or must equal num_keys × D × 4).
// Keys (Petrel workloads): --key_dist=sequential (default; the run's keys
// 0..n-1), uniform (n distinct keys drawn from --key_space) or zipf (n
// Zipf(--zipf_exponent) draws over --key_space, duplicates included).
//
// Exit status: 0 when every run finished and verified, 1 when a run failed,
// 2 for bad flags. Examples (each on one line):
//
//   petrel-bench --workload=raw_zmq,raw_zmq_latency --value_bytes=1048576
//       --inflight=1 --duration_s=3 --repeat=3
//   petrel-launch --num_servers=1 --num_workers=1 -- petrel-bench
//       --workload=raw_zmq,push,pull,latency --value_bytes=1048576
//       --inflight=4 --repeat=3
//   petrel-launch --num_servers=1 --num_workers=1 -- petrel-bench
//       --workload=raw_zmq_kv,push,pull --num_keys=20000 --dim=16
//       --key_dist=zipf --repeat=3

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gflags/gflags.h"
#include "glog/logging.h"

#include "base/cli.h"
#include "base/flag_check.h"
#include "node/node_flags.h"
#include "node/node_runtime.h"
#include "roles/built_in_roles.h"
#include "tools/bench/petrel_workloads.h"
#include "tools/bench/workloads.h"

DEFINE_string(workload, "raw_zmq",
              "Comma-separated workloads to run, in order (see the list "
              "below). Default raw_zmq.");
DEFINE_int64(value_bytes, 1048576,
             "Payload bytes per request (Petrel workloads: spread over "
             "--num_keys keys, a multiple of 4 * num_keys). Default 1048576 "
             "(1 MiB); range [1, 2^30].");
DEFINE_int32(num_keys, 1,
             "Keys per request (Petrel workloads and raw_zmq_kv). Default 1; "
             "range [1, 2^20].");
DEFINE_int64(dim, 0,
             "Floats per key: with it a request carries num_keys * dim * 4 "
             "bytes of values, and --value_bytes may be left out (if given "
             "it must equal that product). Default 0 (use --value_bytes); "
             "range [0, 2^28], product <= 2^30.");
DEFINE_string(key_dist, "sequential",
              "Petrel workloads: the keys of a run: sequential (0..n-1 of "
              "the run), uniform (n distinct keys drawn from --key_space) "
              "or zipf (n Zipf(--zipf_exponent) draws over --key_space, "
              "with duplicates). Default sequential.");
DEFINE_int64(key_space, 100000000,
             "Petrel workloads, --key_dist=uniform|zipf: possible keys per "
             "run. Default 10^8; range [1, 2^32] (uniform: >= --num_keys).");
DEFINE_double(zipf_exponent, 1.1,
              "Petrel workloads, --key_dist=zipf: the Zipf exponent. Default "
              "1.1; range (0, 10].");
DEFINE_int64(max_push_part_bytes, 1048576,
             "Petrel workloads: a push whose values for one server exceed "
             "this many bytes is sent as several messages split at key "
             "boundaries (KVWorker::set_max_push_part_bytes); 0 never "
             "splits. Default 1048576 (1 MiB); range [0, 2^30].");
DEFINE_int64(max_pull_part_bytes, 1048576,
             "Petrel workloads: a pull whose answer from one server should "
             "exceed this many bytes (by the last answer's values per key) "
             "is sent as several messages of consecutive keys "
             "(KVWorker::set_max_pull_part_bytes); 0 never splits. Default "
             "1048576 (1 MiB); range [0, 2^30].");
DEFINE_bool(split_large_keys, true,
            "Petrel workloads: push a key whose values exceed "
            "--max_push_part_bytes in slices of that size "
            "(KVWorker::set_split_large_keys; petrel-server's store takes "
            "them). Default true.");
DEFINE_int32(inflight, 1,
             "Requests kept outstanding. Default 1; range [1, 65536].");
DEFINE_double(duration_s, 3,
              "Seconds each run sends for when --iterations=0. Default 3; "
              "range (0, 86400].");
DEFINE_int64(iterations, 0,
             "Requests per run; 0 runs for --duration_s instead. Default 0.");
DEFINE_int32(wait_timeout_s, 60,
             "Petrel workloads: longest wait for one request, a barrier or "
             "the job's end, in seconds. Default 60; range [1, 86400].");
DEFINE_bool(issue_from_callbacks, false,
            "Petrel workloads: issue each next request from the previous "
            "one's completion callback (on the van thread, as an asynchronous "
            "client would) instead of from the main thread. Default false.");
DEFINE_bool(curve, false,
            "Run the raw ZeroMQ baselines with CURVE security (fresh "
            "keypairs per run; their lines say raw_zmq_curve...). The Petrel "
            "workloads use CURVE when this node has keys (run the job with "
            "petrel-launch --curve). Default false.");
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
    if (f.is_default) continue;
    // A secret's value is never logged (docs/security.md).
    const bool secret = f.name == "auth_token";
    absl::StrAppend(&line, " --", f.name, "=",
                    secret ? "(not shown)" : f.current_value);
  }
  LOG(INFO) << "petrel-bench starting; non-default flags:" << line;
}

int BadFlags(const absl::Status& status) {
  std::fprintf(stderr, "petrel-bench: %s\n",
               std::string(status.message()).c_str());
  return kExitBadFlags;
}

// Checks the flags the Petrel workloads need and gives `bench` the node
// settings; InvalidArgument names the bad flag.
absl::Status ConfigurePetrel(const petrel::WorkloadConfig& config,
                             petrel::PetrelBench* bench) {
  if (absl::Status s = petrel::ValidatePetrelConfig(config); !s.ok()) return s;
  absl::StatusOr<petrel::NodeSettings> settings =
      petrel::NodeSettingsFromFlags(petrel::pb::ROLE_WORKER);
  if (!settings.ok()) return settings.status();
  bench->Configure(*settings, absl::Seconds(FLAGS_wait_timeout_s));
  return absl::OkStatus();
}

// The workloads' settings from the flags, checked.
absl::StatusOr<petrel::WorkloadConfig> ConfigFromFlags() {
  petrel::WorkloadConfig config;
  config.value_bytes = FLAGS_value_bytes;
  config.num_keys = FLAGS_num_keys;
  config.max_push_part_bytes = FLAGS_max_push_part_bytes;
  config.split_large_keys = FLAGS_split_large_keys;
  config.max_pull_part_bytes = FLAGS_max_pull_part_bytes;
  config.inflight = FLAGS_inflight;
  config.duration_s = FLAGS_duration_s;
  config.iterations = FLAGS_iterations;
  config.issue_from_callbacks = FLAGS_issue_from_callbacks;
  config.curve = FLAGS_curve;
  config.dim = FLAGS_dim;
  config.key_space = FLAGS_key_space;
  config.zipf_exponent = FLAGS_zipf_exponent;
  absl::StatusOr<petrel::KeyDist> dist = petrel::ParseKeyDist(FLAGS_key_dist);
  if (!dist.ok()) return dist.status();
  config.key_dist = *dist;
  const bool value_bytes_given =
      !gflags::GetCommandLineFlagInfoOrDie("value_bytes").is_default;
  if (absl::Status s = petrel::ApplyDim(value_bytes_given, &config); !s.ok()) {
    return s;
  }
  if (absl::Status s = petrel::ValidateWorkloadConfig(config); !s.ok()) {
    return s;
  }
  return config;
}

}  // namespace

int main(int argc, char** argv) {
  // Before any thread starts; the forked raw ZeroMQ acker inherits it too,
  // so both sides of every comparison run with the same allocator settings.
  petrel::TuneAllocatorForLargeMessages();
  petrel::WorkloadTable table = petrel::BuiltinWorkloads();
  petrel::PetrelBench bench;
  petrel::AddPetrelWorkloads(&bench, &table);
  petrel::CliOptions cli;
  cli.name = "petrel-bench";
  cli.usage = absl::StrCat(
      "Petrel system benchmark; one result line per run (stdout; logs go "
      "to stderr).\n  petrel-bench [--workload=push,pull] [flags]\n"
      "Workloads:\n",
      petrel::DescribeWorkloads(table));
  if (int code = petrel::ParseCommandLine(cli, &argc, &argv); code >= 0) {
    return code;
  }
  // Started by a PS-Lite launcher as the scheduler or a server.
  if (std::optional<int> code = petrel::RunBuiltInRole(cli.name)) return *code;
  absl::StatusOr<petrel::WorkloadConfig> made = ConfigFromFlags();
  if (!made.ok()) return BadFlags(made.status());
  const petrel::WorkloadConfig config = *std::move(made);
  if (FLAGS_repeat < 1 || FLAGS_repeat > 1000) {
    return BadFlags(absl::InvalidArgumentError(
        absl::StrCat("--repeat=", FLAGS_repeat, " is not in [1, 1000]")));
  }
  absl::StatusOr<std::vector<std::string>> names =
      petrel::ParseWorkloadList(FLAGS_workload, table);
  if (!names.ok()) return BadFlags(names.status());
  if (FLAGS_wait_timeout_s < 1 || FLAGS_wait_timeout_s > 86400) {
    return BadFlags(absl::InvalidArgumentError(absl::StrCat(
        "--wait_timeout_s=", FLAGS_wait_timeout_s, " is not in [1, 86400]")));
  }
  bool needs_cluster = false;
  for (const std::string& name : *names) {
    needs_cluster = needs_cluster || table.at(name).needs_cluster;
  }
  if (needs_cluster) {
    if (absl::Status s = ConfigurePetrel(config, &bench); !s.ok()) {
      return BadFlags(s);
    }
  }
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
  if (bench.started()) {
    if (absl::Status s = bench.Finish(); !s.ok()) {
      std::fprintf(stderr, "petrel-bench: %s\n", s.ToString().c_str());
      return kExitRunFailed;
    }
  }
  return 0;
}
