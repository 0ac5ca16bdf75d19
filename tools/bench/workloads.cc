#include "tools/bench/workloads.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

#include "tools/bench/raw_zmq.h"

namespace petrel {
namespace {

constexpr int64_t kMaxValueBytes = int64_t{1} << 30;
constexpr int kMaxNumKeys = 1 << 20;
constexpr int kMaxInflight = 65536;
constexpr double kMaxDurationS = 86400;
constexpr int64_t kLatencyValueBytes = 4;
constexpr int64_t kMaxDim = int64_t{1} << 28;

absl::StatusOr<BenchResult> RunRawZmqThroughput(const WorkloadConfig& config) {
  RawZmqOptions options;
  options.value_bytes = config.value_bytes;
  options.inflight = config.inflight;
  options.iterations = config.iterations;
  options.duration_s = config.duration_s;
  options.workload_name = config.curve ? "raw_zmq_curve" : "raw_zmq";
  options.curve = config.curve;
  return RunRawZmq(options);
}

// The bytes of a Petrel request of `config`: num_keys 8-byte keys and
// value_bytes of values.
int64_t KvRequestBytes(const WorkloadConfig& config) {
  return int64_t{8} * config.num_keys + config.value_bytes;
}

absl::StatusOr<BenchResult> RunRawZmqKv(const WorkloadConfig& config) {
  if (KvRequestBytes(config) > kMaxValueBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "raw_zmq_kv: --num_keys=", config.num_keys,
        " keys and --value_bytes=", config.value_bytes, " are ",
        KvRequestBytes(config), " bytes per request, over ", kMaxValueBytes));
  }
  RawZmqOptions options;
  options.value_bytes = KvRequestBytes(config);
  options.inflight = config.inflight;
  options.iterations = config.iterations;
  options.duration_s = config.duration_s;
  options.workload_name = config.curve ? "raw_zmq_kv_curve" : "raw_zmq_kv";
  options.curve = config.curve;
  absl::StatusOr<BenchResult> result = RunRawZmq(options);
  if (result.ok()) result->keys_per_request = config.num_keys;
  return result;
}

absl::StatusOr<BenchResult> RunRawZmqLatency(const WorkloadConfig& config) {
  RawZmqOptions options;
  options.value_bytes = kLatencyValueBytes;
  options.inflight = 1;
  options.iterations = config.iterations;
  options.duration_s = config.duration_s;
  options.workload_name =
      config.curve ? "raw_zmq_latency_curve" : "raw_zmq_latency";
  options.curve = config.curve;
  return RunRawZmq(options);
}

}  // namespace

WorkloadTable BuiltinWorkloads() {
  WorkloadTable table;
  // Baselines: no Petrel code on the path.
  table["raw_zmq"] = {
      "raw ZeroMQ DEALER->ROUTER to a forked acker on TCP loopback; "
      "--value_bytes per request, --inflight outstanding (throughput baseline)",
      &RunRawZmqThroughput, /*needs_cluster=*/false};
  table["raw_zmq_kv"] = {
      "raw_zmq moving the bytes of a Petrel request: --num_keys * 8 bytes of "
      "keys plus --value_bytes (or --dim) of values; value_bytes in its line "
      "is that sum, keys_per_s compares with push/pull",
      &RunRawZmqKv, /*needs_cluster=*/false};
  table["raw_zmq_latency"] = {
      "raw_zmq with 4-byte values and 1 in flight (round-trip latency "
      "baseline; ignores --value_bytes and --inflight)",
      &RunRawZmqLatency, /*needs_cluster=*/false};
  return table;
}

absl::Status ValidateWorkloadConfig(const WorkloadConfig& c) {
  if (c.value_bytes < 1 || c.value_bytes > kMaxValueBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("--value_bytes=", c.value_bytes, " is not in [1, ",
                     kMaxValueBytes, "]"));
  }
  if (c.num_keys < 1 || c.num_keys > kMaxNumKeys) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--num_keys=", c.num_keys, " is not in [1, ", kMaxNumKeys, "]"));
  }
  if (c.max_push_part_bytes < 0 || c.max_push_part_bytes > kMaxValueBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max_push_part_bytes=", c.max_push_part_bytes,
                     " is not in [0, ", kMaxValueBytes, "]"));
  }
  if (c.max_pull_part_bytes < 0 || c.max_pull_part_bytes > kMaxValueBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max_pull_part_bytes=", c.max_pull_part_bytes,
                     " is not in [0, ", kMaxValueBytes, "]"));
  }
  if (c.inflight < 1 || c.inflight > kMaxInflight) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--inflight=", c.inflight, " is not in [1, ", kMaxInflight, "]"));
  }
  if (c.iterations < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--iterations=", c.iterations, " is negative"));
  }
  if (c.iterations == 0 &&
      !(c.duration_s > 0 && c.duration_s <= kMaxDurationS)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--duration_s=", c.duration_s, " is not in (0, ", kMaxDurationS, "]"));
  }
  if (c.dim < 0 || c.dim > kMaxDim) {
    return absl::InvalidArgumentError(
        absl::StrCat("--dim=", c.dim, " is not in [0, ", kMaxDim, "]"));
  }
  return ValidateKeyDrawOptions(KeyDrawOptionsOf(c));
}

absl::Status ApplyDim(bool value_bytes_given, WorkloadConfig* config) {
  // A bad --num_keys is left to ValidateWorkloadConfig, which names it.
  if (config->dim == 0 || config->num_keys < 1) return absl::OkStatus();
  if (config->dim < 0 || config->dim > kMaxDim) {
    return absl::InvalidArgumentError(
        absl::StrCat("--dim=", config->dim, " is not in [0, ", kMaxDim, "]"));
  }
  const int64_t bytes = int64_t{4} * config->num_keys * config->dim;
  if (bytes > kMaxValueBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--num_keys=", config->num_keys, " x --dim=", config->dim,
        " floats are ", bytes, " bytes per request, over ", kMaxValueBytes));
  }
  if (value_bytes_given && config->value_bytes != bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--value_bytes=", config->value_bytes, " disagrees with --num_keys=",
        config->num_keys, " x --dim=", config->dim, " floats (", bytes,
        " bytes); give one or the other"));
  }
  config->value_bytes = bytes;
  return absl::OkStatus();
}

KeyDrawOptions KeyDrawOptionsOf(const WorkloadConfig& config) {
  KeyDrawOptions options;
  options.dist = config.key_dist;
  options.num_keys = config.num_keys;
  options.key_space = config.key_space;
  options.zipf_exponent = config.zipf_exponent;
  return options;
}

absl::StatusOr<std::vector<std::string>> ParseWorkloadList(
    absl::string_view list, const WorkloadTable& table) {
  std::vector<std::string> names = absl::StrSplit(list, ',');
  for (const std::string& name : names) {
    if (table.count(name) == 0) {
      std::vector<std::string> known;
      for (const auto& entry : table) known.push_back(entry.first);
      return absl::InvalidArgumentError(
          absl::StrCat("--workload=", list, ": unknown workload \"", name,
                       "\"; known: ", absl::StrJoin(known, ", ")));
    }
  }
  return names;
}

std::string DescribeWorkloads(const WorkloadTable& table) {
  size_t width = 0;
  for (const auto& entry : table) width = std::max(width, entry.first.size());
  std::string out;
  for (const auto& entry : table) {
    absl::StrAppendFormat(&out, "  %-*s  %s\n", static_cast<int>(width),
                          entry.first, entry.second.description);
  }
  return out;
}

}  // namespace petrel
