#include "job/job_tables.h"

namespace petrel {

int FmDim(const pb::ModelConfig& model) {
  return model.fm_dim() == 0 ? 8 : model.fm_dim();
}

std::vector<pb::TableProto> JobTables(const pb::JobConfig& job) {
  if (job.tables_size() > 0) {
    std::vector<pb::TableProto> tables(job.tables().begin(),
                                       job.tables().end());
    absl::StatusOr<MlpLayout> layout = MlpLayoutFromJob(job);
    if (job.model().kind() != pb::ModelConfig::KIND_MLP || !layout.ok()) {
      return tables;
    }
    // The MLP's dense table may leave its shape to the layout.
    for (pb::TableProto& t : tables) {
      if (t.id() != kMlpTable) continue;
      if (t.dim() == 0) t.set_dim(kMlpRowFloats);
      if (t.num_keys() == 0) {
        t.set_dense(true);
        t.set_num_keys(layout->dense_rows);
      }
    }
    return tables;
  }
  std::vector<pb::TableProto> tables;
  if (job.model().kind() == pb::ModelConfig::KIND_MLP) {
    if (job.model().wide()) {
      tables.emplace_back().set_id(kLinearTable);
      tables.back().set_dim(1);
    }
    pb::TableProto& emb = tables.emplace_back();
    emb.set_id(kEmbeddingTable);
    emb.set_dim(EmbeddingDim(job.model()));
    emb.mutable_initializer()->set_kind(pb::InitializerConfig::KIND_NORMAL);
    emb.mutable_initializer()->set_scale(0.01f);
    emb.mutable_optimizer()->set_kind(pb::OptimizerProto::KIND_ADAGRAD);
    pb::TableProto& mlp = tables.emplace_back();
    mlp.set_id(kMlpTable);
    mlp.set_dim(kMlpRowFloats);
    mlp.set_dense(true);
    absl::StatusOr<MlpLayout> layout = MlpLayoutFromJob(job);
    // An invalid layout is reported by TableOptionsFromJob.
    mlp.set_num_keys(layout.ok() ? layout->dense_rows : 1);
    mlp.mutable_initializer()->set_kind(pb::InitializerConfig::KIND_NORMAL);
    mlp.mutable_initializer()->set_scale(0.05f);
    mlp.mutable_optimizer()->set_kind(pb::OptimizerProto::KIND_ADAM);
    return tables;
  }
  tables.emplace_back().set_id(kLinearTable);
  tables.back().set_dim(1);
  if (job.model().kind() == pb::ModelConfig::KIND_FM) {
    pb::TableProto& factors = tables.emplace_back();
    factors.set_id(1);
    factors.set_dim(FmDim(job.model()));
    factors.mutable_initializer()->set_kind(pb::InitializerConfig::KIND_NORMAL);
    factors.mutable_initializer()->set_scale(0.01f);
  }
  return tables;
}

}  // namespace petrel
