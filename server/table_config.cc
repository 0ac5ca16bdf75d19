#include "server/table_config.h"

#include <cmath>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

#include "base/status_macros.h"

namespace petrel {
namespace {

absl::Status Bad(absl::string_view field, absl::string_view name,
                 absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(field, ".", name, ": ", why));
}

// A float field where 0 means "the default": finite and >= 0, and below
// `upper` when given.
absl::Status CheckFloat(absl::string_view field, absl::string_view name,
                        float value, float upper = INFINITY) {
  if (!std::isfinite(value) || value < 0 || value >= upper) {
    std::string range =
        std::isinf(upper) ? ">= 0" : absl::StrCat("in [0, ", upper, ")");
    return Bad(field, name, absl::StrCat(value, " is not ", range));
  }
  return absl::OkStatus();
}

float OrDefault(float value, float fallback) {
  return value == 0.0f ? fallback : value;
}

float DefaultLearningRate(pb::OptimizerProto::Kind kind) {
  switch (kind) {
    case pb::OptimizerProto::KIND_SGD:
      return 0.01f;
    case pb::OptimizerProto::KIND_ADAGRAD:
      return 0.05f;
    case pb::OptimizerProto::KIND_ADAM:
      return 0.001f;
    default:
      return 0.05f;  // FTRL does not use it
  }
}

absl::Status CheckOptimizerFloats(const pb::OptimizerProto& p,
                                  absl::string_view field) {
  for (absl::Status s : {
           CheckFloat(field, "learning_rate", p.learning_rate()),
           CheckFloat(field, "epsilon", p.epsilon()),
           CheckFloat(field, "initial_accumulator", p.initial_accumulator()),
           CheckFloat(field, "beta1", p.beta1(), 1.0f),
           CheckFloat(field, "beta2", p.beta2(), 1.0f),
           CheckFloat(field, "ftrl_alpha", p.ftrl_alpha()),
           CheckFloat(field, "ftrl_beta", p.ftrl_beta()),
           CheckFloat(field, "ftrl_l1", p.ftrl_l1()),
           CheckFloat(field, "ftrl_l2", p.ftrl_l2()),
           CheckFloat(field, "ftrl_weight_decay", p.ftrl_weight_decay()),
           CheckFloat(field, "weight_decay", p.weight_decay()),
       }) {
    if (!s.ok()) return s;
  }
  if (std::isnan(p.weight_min()) || std::isnan(p.weight_max())) {
    return Bad(field, "weight_min", "weight bounds must be numbers");
  }
  if (p.weight_min() > p.weight_max()) {
    return Bad(
        field, "weight_min",
        absl::StrCat(p.weight_min(), " is above weight_max ", p.weight_max()));
  }
  return absl::OkStatus();
}

absl::Status CheckTableFitsModel(const pb::ModelConfig& model,
                                 const absl::flat_hash_map<int, int>& dims) {
  auto need = [&](int id, int dim) -> absl::Status {
    auto it = dims.find(id);
    if (it == dims.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("tables: the model needs table ", id, " (dim ", dim,
                       "), which is not configured"));
    }
    if (it->second != dim) {
      return absl::InvalidArgumentError(
          absl::StrCat("tables: table ", id, " has dim ", it->second,
                       ", the model needs ", dim));
    }
    return absl::OkStatus();
  };
  if (model.kind() == pb::ModelConfig::KIND_MLP) {
    PETREL_RETURN_IF_ERROR(need(kEmbeddingTable, EmbeddingDim(model)));
    PETREL_RETURN_IF_ERROR(need(kMlpTable, kMlpRowFloats));
    return model.wide() ? need(kLinearTable, 1) : absl::OkStatus();
  }
  absl::Status s = need(kLinearTable, 1);
  if (s.ok() && model.kind() == pb::ModelConfig::KIND_FM) {
    s = need(kFactorTable, FmDim(model));
  }
  return s;
}

// The MLP's dense table must hold exactly its weights.
absl::Status CheckMlpTable(const pb::JobConfig& job,
                           const std::vector<TableOptions>& tables) {
  PETREL_ASSIGN_OR_RETURN(MlpLayout layout, MlpLayoutFromJob(job));
  for (const TableOptions& t : tables) {
    if (t.id != kMlpTable) continue;
    if (!t.dense || t.num_keys != layout.dense_rows) {
      return absl::InvalidArgumentError(absl::StrCat(
          "tables: table ", kMlpTable, " holds the MLP's ", layout.num_params,
          " weights and must be dense: true with num_keys: ", layout.dense_rows,
          " (dim ", kMlpRowFloats, ")"));
    }
  }
  return absl::OkStatus();
}

// Admission and eviction fields (docs/memory.md).
absl::Status EvictionFromProto(const pb::TableProto& t, absl::string_view field,
                               TableOptions* options) {
  constexpr int64_t kMaxTtl = 1000000;
  auto in = [&](absl::string_view name, int64_t v, int64_t hi) {
    return v < 0 || v > hi
               ? Bad(field, name, absl::StrCat(v, " is not in 0..", hi))
               : absl::OkStatus();
  };
  PETREL_RETURN_IF_ERROR(in("admit_after", t.admit_after(), 65535));
  PETREL_RETURN_IF_ERROR(
      in("admission_counters", t.admission_counters(), int64_t{1} << 32));
  if (t.admission_counters() > 0 && t.admission_counters() < 64) {
    return Bad(field, "admission_counters",
               absl::StrCat(t.admission_counters(),
                            " is below 64 (0 means the default, 2^20)"));
  }
  PETREL_RETURN_IF_ERROR(in("ttl_clocks", t.ttl_clocks(), kMaxTtl));
  PETREL_RETURN_IF_ERROR(in("ttl_batches", t.ttl_batches(), kMaxTtl));
  if (t.ttl_clocks() > 0 && t.ttl_batches() > 0) {
    return Bad(field, "ttl_batches", "set together with ttl_clocks (pick one)");
  }
  const double cap = t.memory_cap_mib();
  if (!std::isfinite(cap) || cap < 0 || cap > 1 << 30) {
    return Bad(field, "memory_cap_mib",
               absl::StrCat(cap, " is not in 0..2^30 (MiB)"));
  }
  const bool any = t.admit_after() > 1 || t.ttl_clocks() > 0 ||
                   t.ttl_batches() > 0 || cap > 0;
  if (any && t.dense()) {
    return Bad(field, "dense",
               "admit_after, ttl_clocks, ttl_batches and memory_cap_mib are "
               "for sparse tables (a dense table holds all its rows)");
  }
  options->admit_after = static_cast<uint32_t>(t.admit_after());
  if (t.admission_counters() > 0) {
    options->admission_counters = static_cast<uint64_t>(t.admission_counters());
  }
  if (t.ttl_batches() > 0) {
    options->ttl_ticks = static_cast<uint64_t>(t.ttl_batches());
    options->ttl_unit = TableOptions::TtlUnit::kPushes;
  } else {
    options->ttl_ticks = static_cast<uint64_t>(t.ttl_clocks());
    options->ttl_unit = TableOptions::TtlUnit::kClocks;
  }
  options->memory_cap_bytes = static_cast<uint64_t>(cap * (1 << 20));
  return absl::OkStatus();
}

absl::StatusOr<TableOptions> TableFromProto(const pb::TableProto& t,
                                            absl::string_view field) {
  TableOptions options;
  if (t.id() < 0) return Bad(field, "id", absl::StrCat(t.id(), " is negative"));
  options.id = t.id();
  if (t.dim() < 0 || t.dim() > 65536) {
    return Bad(field, "dim", absl::StrCat(t.dim(), " is not in 0..65536"));
  }
  options.dim = t.dim() == 0 ? 1 : t.dim();
  options.dense = t.dense();
  options.num_keys = t.num_keys();
  if (t.dense() && (t.num_keys() < 1 || t.num_keys() > (uint64_t{1} << 32))) {
    return Bad(field, "num_keys",
               absl::StrCat(t.num_keys(), " is not in 1..2^32 (dense table)"));
  }
  if (!t.dense() && t.num_keys() != 0) {
    return Bad(field, "num_keys", "set on a sparse table (needs dense: true)");
  }
  absl::StatusOr<InitializerConfig> init = InitializerFromProto(
      t.initializer(), absl::StrCat(field, ".initializer"));
  if (!init.ok()) return init.status();
  options.initializer = *init;
  absl::StatusOr<OptimizerConfig> opt =
      OptimizerFromProto(t.optimizer(), absl::StrCat(field, ".optimizer"));
  if (!opt.ok()) return opt.status();
  options.optimizer = *opt;
  PETREL_RETURN_IF_ERROR(EvictionFromProto(t, field, &options));
  return options;
}

}  // namespace

absl::StatusOr<OptimizerConfig> OptimizerFromProto(const pb::OptimizerProto& p,
                                                   absl::string_view field) {
  OptimizerConfig c;
  switch (p.kind()) {
    case pb::OptimizerProto::KIND_FTRL:
      c.kind = OptimizerKind::kFtrl;
      break;
    case pb::OptimizerProto::KIND_SGD:
      c.kind = OptimizerKind::kSgd;
      break;
    case pb::OptimizerProto::KIND_ADAGRAD:
      c.kind = OptimizerKind::kAdagrad;
      break;
    case pb::OptimizerProto::KIND_ADAM:
      c.kind = OptimizerKind::kAdam;
      break;
    default:
      return Bad(field, "kind", absl::StrCat(p.kind(), " is not a known kind"));
  }
  absl::Status s = CheckOptimizerFloats(p, field);
  if (!s.ok()) return s;
  c.learning_rate = OrDefault(p.learning_rate(), DefaultLearningRate(p.kind()));
  c.epsilon = OrDefault(p.epsilon(), 1e-8f);
  c.initial_accumulator = p.initial_accumulator();
  c.beta1 = OrDefault(p.beta1(), 0.9f);
  c.beta2 = OrDefault(p.beta2(), 0.999f);
  c.ftrl_alpha = OrDefault(p.ftrl_alpha(), 0.05f);
  c.ftrl_beta = OrDefault(p.ftrl_beta(), 0.001f);
  c.ftrl_l1 = p.ftrl_l1();
  c.ftrl_l2 = p.ftrl_l2();
  c.ftrl_weight_decay = p.ftrl_weight_decay();
  c.weight_decay = p.weight_decay();
  if (c.weight_decay != 0 && c.kind == OptimizerKind::kFtrl) {
    return Bad(field, "weight_decay", "FTRL has none; use ftrl_weight_decay");
  }
  if (p.weight_min() < p.weight_max()) {
    c.weight_min = p.weight_min();
    c.weight_max = p.weight_max();
  }
  return c;
}

absl::StatusOr<InitializerConfig> InitializerFromProto(
    const pb::InitializerConfig& p, absl::string_view field) {
  InitializerConfig c;
  switch (p.kind()) {
    case pb::InitializerConfig::KIND_ZEROS:
      c.kind = InitializerKind::kZeros;
      break;
    case pb::InitializerConfig::KIND_UNIFORM:
      c.kind = InitializerKind::kUniform;
      break;
    case pb::InitializerConfig::KIND_NORMAL:
      c.kind = InitializerKind::kNormal;
      break;
    default:
      return Bad(field, "kind", absl::StrCat(p.kind(), " is not a known kind"));
  }
  absl::Status s = CheckFloat(field, "scale", p.scale());
  if (!s.ok()) return s;
  c.scale = p.scale();
  c.seed = p.seed();
  return c;
}

absl::StatusOr<std::vector<TableOptions>> TableOptionsFromJob(
    const pb::JobConfig& job) {
  if (job.model().kind() != pb::ModelConfig::KIND_LR &&
      job.model().kind() != pb::ModelConfig::KIND_FM &&
      job.model().kind() != pb::ModelConfig::KIND_MLP) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model.kind: ", job.model().kind(), " is not a known kind"));
  }
  if (job.model().kind() == pb::ModelConfig::KIND_MLP) {
    PETREL_RETURN_IF_ERROR(MlpLayoutFromJob(job).status());
  }
  if (job.model().fm_dim() < 0 || job.model().fm_dim() > 65536) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model.fm_dim: ", job.model().fm_dim(), " is not in 0..65536"));
  }
  const bool defaults = job.tables_size() == 0;
  std::vector<TableOptions> out;
  absl::flat_hash_map<int, int> dims;
  std::vector<pb::TableProto> tables = JobTables(job);
  for (size_t i = 0; i < tables.size(); ++i) {
    std::string field = defaults
                            ? absl::StrCat("default table ", tables[i].id())
                            : absl::StrCat("tables[", i, "]");
    absl::StatusOr<TableOptions> options = TableFromProto(tables[i], field);
    if (!options.ok()) return options.status();
    if (!dims.emplace(options->id, options->dim).second) {
      return Bad(field, "id",
                 absl::StrCat(options->id, " is used by another table"));
    }
    out.push_back(*options);
  }
  absl::Status s = CheckTableFitsModel(job.model(), dims);
  if (!s.ok()) return s;
  if (job.model().kind() == pb::ModelConfig::KIND_MLP) {
    PETREL_RETURN_IF_ERROR(CheckMlpTable(job, out));
  }
  return out;
}

absl::StatusOr<int64_t> MaxDelayFromJob(const pb::JobConfig& job) {
  const int32_t tau = job.consistency().max_delay();
  if (tau < -1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "consistency.max_delay: ", tau, " is below -1 (-1 means no bound)"));
  }
  return tau;
}

}  // namespace petrel
