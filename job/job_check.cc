#include "job/job_check.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

#include "cluster/replica_map.h"
#include "job/crosses_config.h"
#include "job/job_tables.h"
#include "job/model_layout.h"

namespace petrel {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

// Floats of optimizer state per row of `dim` values, as server/optimizer.cc
// keeps them.
int64_t StateFloats(pb::OptimizerProto::Kind kind, int64_t dim) {
  switch (kind) {
    case pb::OptimizerProto::KIND_SGD:
      return 0;
    case pb::OptimizerProto::KIND_ADAGRAD:
      return dim;
    case pb::OptimizerProto::KIND_ADAM:
      return 2 * dim + 1;
    default:
      return 2 * dim;  // FTRL: z and n
  }
}

int64_t NumServers(const pb::JobConfig& job) {
  return job.num_servers() > 0 ? job.num_servers() : 1;
}

// Bytes of one dense table on one server (double: a config may ask for
// more than int64 holds).
double DenseTableBytes(const pb::JobConfig& job, const pb::TableProto& t) {
  if (!t.dense()) return 0;
  const int64_t dim = t.dim() > 0 ? t.dim() : 1;
  const int64_t servers = NumServers(job);
  const int64_t keys = static_cast<int64_t>(
      (t.num_keys() + static_cast<uint64_t>(servers) - 1) / servers);
  const double floats = static_cast<double>(keys) *
                        (dim + StateFloats(t.optimizer().kind(), dim));
  return floats * sizeof(float);
}

// The weights alone of one server's share of dense table `t`.
double DenseWeightBytes(const pb::JobConfig& job, const pb::TableProto& t) {
  if (!t.dense()) return 0;
  const int64_t dim = t.dim() > 0 ? t.dim() : 1;
  const uint64_t servers = static_cast<uint64_t>(NumServers(job));
  return static_cast<double>((t.num_keys() + servers - 1) / servers) * dim *
         sizeof(float);
}

std::string Gib(double bytes) {
  return absl::StrFormat("%.1f GiB", bytes / (kMiB << 10));
}

std::string Mib(double bytes) {
  return absl::StrFormat("%.1f MiB", bytes / kMiB);
}

// Bytes a row of a capped sparse table takes: its floats (weights and
// optimizer state), 16 bytes of tracking (key and last touch) and its index
// slots (16 bytes at a load of at most 11/16: about 24); docs/memory.md,
// "Memory per row", measures 60 bytes beyond the floats.
int64_t CappedRowBytes(const pb::TableProto& t) {
  const int64_t dim = t.dim() > 0 ? t.dim() : 1;
  return (dim + StateFloats(t.optimizer().kind(), dim)) *
             static_cast<int64_t>(sizeof(float)) +
         16 + 24;
}

// Bytes of a sparse table's admission sketch on each server (2 bytes a
// counter), held whatever the rows.
double SketchBytes(const pb::TableProto& t) {
  if (t.dense() || t.admit_after() <= 1) return 0;
  return 2.0 * (t.admission_counters() > 0 ? t.admission_counters()
                                           : int64_t{1} << 20);
}

// One server's share of the job's tables, as CheckJobConfig estimates it.
struct ServerEstimate {
  double dense = 0;  // dense tables: all their rows, never evicted
  // A message of the server's own dense weights in flight (the answer to a
  // pull of them all, or a push of their gradients), counted once; measured
  // with an MLP of 9e8 weights on one server: 1.2 times them beyond the
  // table.
  double in_flight = 0;
  double capped = 0;        // sparse tables with memory_cap_mib: their caps
  double sketches = 0;      // admission sketches of the uncapped sparse tables
  bool unbounded = false;   // a sparse table without memory_cap_mib
  int largest_capped = -1;  // index in job.tables of the largest cap
  double server_cap = 0;    // server.memory_cap_mib in bytes; 0: none

  // min(the tables' estimate, the server's cap), and never below the
  // dense tables, which the cap cannot evict.
  double Total() const {
    const double tables = dense + capped + sketches;
    if (server_cap <= 0) return tables + in_flight;
    return in_flight + std::max(dense, unbounded
                                           ? server_cap
                                           : std::min(tables, server_cap));
  }
};

ServerEstimate EstimateServer(const pb::JobConfig& job) {
  ServerEstimate e;
  e.server_cap = job.server().memory_cap_mib() * kMiB;
  const std::vector<pb::TableProto> tables = JobTables(job);
  double largest = 0;
  for (size_t i = 0; i < tables.size(); ++i) {
    const pb::TableProto& t = tables[i];
    if (t.dense()) {
      // Each server holds its own share and a copy of R - 1 others'.
      e.dense += DenseTableBytes(job, t) *
                 ReplicaMap::Resolve(job.replicas(),
                                     static_cast<int>(NumServers(job)));
      e.in_flight += DenseWeightBytes(job, t);
    } else if (t.memory_cap_mib() > 0) {
      const double cap = t.memory_cap_mib() * kMiB;
      e.capped += cap;
      if (cap > largest) {
        largest = cap;
        e.largest_capped = static_cast<int>(i);
      }
    } else {
      e.sketches += SketchBytes(t);
      e.unbounded = true;
    }
  }
  return e;
}

}  // namespace

int64_t FindUnsafeValue(absl::Span<const float> values, float limit) {
  for (size_t i = 0; i < values.size(); ++i) {
    // NaN fails the comparison too.
    if (!(std::fabs(values[i]) <= limit)) return static_cast<int64_t>(i);
  }
  return -1;
}

std::string OptimizerName(pb::OptimizerProto::Kind kind) {
  switch (kind) {
    case pb::OptimizerProto::KIND_SGD:
      return "SGD";
    case pb::OptimizerProto::KIND_ADAGRAD:
      return "Adagrad";
    case pb::OptimizerProto::KIND_ADAM:
      return "Adam";
    case pb::OptimizerProto::KIND_FTRL:
      return "FTRL";
    default:
      return absl::StrCat("kind ", kind);
  }
}

std::string DescribeTable(const pb::JobConfig& job, int id) {
  for (const pb::TableProto& t : JobTables(job)) {
    if (t.id() == id) {
      return absl::StrCat("table ", id, " (optimizer ",
                          OptimizerName(t.optimizer().kind()), ")");
    }
  }
  return absl::StrCat("table ", id);
}

int64_t PhysicalMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) return 0;
  return static_cast<int64_t>(pages) * page_size;
}

int64_t EstimateServerBytes(const pb::JobConfig& job) {
  return static_cast<int64_t>(std::min(EstimateServer(job).Total(), 9e18));
}

int64_t EstimateWorkerBytes(const pb::JobConfig& job) {
  if (job.model().kind() != pb::ModelConfig::KIND_MLP) return 0;
  absl::StatusOr<MlpLayout> layout = MlpLayoutFromJob(job);
  if (!layout.ok()) return 0;
  // The pulled weights and their gradients, a message of them in flight
  // (counted whole; measured with an MLP of 9e8 weights: half of one beyond
  // the two when the job was killed), and each layer's outputs and their
  // gradients for one batch.
  int64_t widths = 0;
  for (const DenseLayerLayout& layer : layout->layers) {
    widths += static_cast<int64_t>(layer.out);
  }
  const int64_t batch =
      job.train().batch_size() > 0 ? job.train().batch_size() : 1024;
  return (3 * static_cast<int64_t>(layout->padded_params()) +
          2 * batch * widths) *
         static_cast<int64_t>(sizeof(float));
}

absl::Status CheckValidationConfig(const pb::JobConfig& job) {
  const pb::DataConfig& data = job.data();
  const float f = data.validation_fraction();
  if (!(f >= 0 && f < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("data.validation_fraction = ", f, " is not in [0, 1)"));
  }
  if (f > 0 && !data.validation().empty()) {
    return absl::InvalidArgumentError(
        "data.validation and data.validation_fraction are both set; use "
        "one: validation files, or a fraction held out of data.train");
  }
  const pb::EarlyStoppingConfig& es = job.train().early_stopping();
  if (es.patience() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("train.early_stopping.patience = ", es.patience(),
                     " must be >= 1 (0: the default, 3)"));
  }
  if (!std::isfinite(es.min_delta()) || es.min_delta() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("train.early_stopping.min_delta = ", es.min_delta(),
                     " must be finite and >= 0"));
  }
  if (es.metric() != pb::EarlyStoppingConfig::METRIC_NONE &&
      data.validation().empty() && f == 0) {
    return absl::InvalidArgumentError(
        "train.early_stopping needs validation data: set data.validation "
        "(files) or data.validation_fraction");
  }
  return absl::OkStatus();
}

namespace {

// The fields' own ranges and the sections' (crosses, MLP layout,
// validation).
absl::Status CheckJobFields(const pb::JobConfig& job) {
  if (job.num_servers() < 0 || job.num_workers() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(job.num_servers() < 0 ? "num_servers: " : "num_workers: ",
                     std::min(job.num_servers(), job.num_workers()),
                     " is negative (0 means 1)"));
  }
  if (job.replicas() < 0 || job.replicas() > NumServers(job)) {
    return absl::InvalidArgumentError(
        absl::StrCat("replicas: ", job.replicas(), " is not in 0..",
                     NumServers(job), " (the servers)"));
  }
  if (job.memory_limit_mib() < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "memory_limit_mib: ", job.memory_limit_mib(), " is negative"));
  }
  const float max_abs = job.data().max_abs_value();
  if (!std::isfinite(max_abs) || max_abs < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "data.max_abs_value: ", max_abs, " is not a finite value >= 0"));
  }
  if (absl::Status s = CheckCrossesConfig(job); !s.ok()) return s;
  if (job.model().kind() == pb::ModelConfig::KIND_MLP) {
    absl::Status s = MlpLayoutFromJob(job).status();
    if (!s.ok()) return s;
  }
  if (absl::Status s = CheckValidationConfig(job); !s.ok()) return s;
  const double server_cap_mib = job.server().memory_cap_mib();
  if (!(server_cap_mib >= 0 && server_cap_mib <= 1e12)) {
    return absl::InvalidArgumentError(
        absl::StrCat("server.memory_cap_mib: ", server_cap_mib,
                     " is not a finite value in 0..10^12"));
  }
  return absl::OkStatus();
}

// The tables' and the MLP's memory against the server caps and `limit`
// bytes (memory_limit_mib, else the machine's `physical_bytes`; none when
// both are 0).
absl::Status CheckJobMemory(const pb::JobConfig& job, int64_t physical_bytes) {
  const bool mlp = job.model().kind() == pb::ModelConfig::KIND_MLP;
  const ServerEstimate estimate = EstimateServer(job);
  if (estimate.server_cap > 0 && estimate.dense > estimate.server_cap) {
    return absl::InvalidArgumentError(
        absl::StrCat("server.memory_cap_mib: ", Mib(estimate.server_cap),
                     " is below the dense tables, which need about ",
                     Gib(estimate.dense), " on each of ", NumServers(job),
                     " server(s) (rows and optimizer state, never evicted)"));
  }
  const int64_t limit = job.memory_limit_mib() > 0
                            ? job.memory_limit_mib() * kMiB
                            : physical_bytes;
  if (limit <= 0) return absl::OkStatus();
  const std::string limit_name =
      job.memory_limit_mib() > 0 ? "memory_limit_mib" : "physical memory";
  const double server = estimate.Total();
  if (server > limit) {
    const std::string above =
        absl::StrCat(", above the ", limit_name, " of ", Gib(limit));
    if (estimate.server_cap > 0 && server >= estimate.server_cap) {
      return absl::InvalidArgumentError(absl::StrCat(
          "server.memory_cap_mib: each of ", NumServers(job),
          " server(s) may hold ", Gib(server), " of tables (its cap)", above));
    }
    if (estimate.largest_capped >= 0 && estimate.capped >= estimate.dense) {
      const pb::TableProto& t = job.tables(estimate.largest_capped);
      const double cap = t.memory_cap_mib() * kMiB;
      return absl::InvalidArgumentError(absl::StrCat(
          "tables[", estimate.largest_capped, "].memory_cap_mib: table ",
          t.id(), " may hold ", Gib(cap), " on each of ", NumServers(job),
          " server(s) (about ", static_cast<int64_t>(cap / CappedRowBytes(t)),
          " rows of ", CappedRowBytes(t), " bytes), the tables ", Gib(server),
          " in all", above));
    }
    return absl::InvalidArgumentError(absl::StrCat(
        mlp ? "model.hidden" : "tables", ": the dense tables need about ",
        Gib(estimate.dense), " on each of ", NumServers(job),
        " server(s) (rows and optimizer state)", above));
  }
  const int64_t worker = EstimateWorkerBytes(job);
  if (worker > limit) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model.hidden: the MLP's weights and gradients need about ",
        Gib(worker), " on each worker, above the ", limit_name, " of ",
        Gib(limit)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckJobConfig(const pb::JobConfig& config, int num_servers,
                            int64_t physical_bytes) {
  pb::JobConfig job = config;
  if (num_servers > 0 && config.num_servers() >= 0) {
    job.set_num_servers(num_servers);
  }
  if (absl::Status s = CheckJobFields(job); !s.ok()) return s;
  return CheckJobMemory(job, physical_bytes);
}

absl::Status CheckOneMachineMemory(const pb::JobConfig& job, int num_servers,
                                   int num_workers, int64_t physical_bytes) {
  if (physical_bytes <= 0) return absl::OkStatus();
  pb::JobConfig sized = job;
  sized.set_num_servers(std::max(num_servers, 1));
  const double total = static_cast<double>(EstimateServerBytes(sized)) *
                           std::max(num_servers, 1) +
                       static_cast<double>(EstimateWorkerBytes(sized)) *
                           std::max(num_workers, 1);
  if (total <= static_cast<double>(physical_bytes)) return absl::OkStatus();
  const bool mlp = job.model().kind() == pb::ModelConfig::KIND_MLP;
  return absl::InvalidArgumentError(absl::StrCat(
      mlp ? "model.hidden" : "tables", ": ", num_servers, " server(s) and ",
      num_workers, " worker(s) on this machine need about ",
      Gib(std::min(total, 9e18)),
      " together (dense tables with optimizer state, capped sparse tables "
      "at their caps, MLP weights and gradients), above the physical "
      "memory of ",
      Gib(physical_bytes)));
}

}  // namespace petrel
