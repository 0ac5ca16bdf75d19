#include "server/table_config.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "base/config_file.h"

namespace petrel {
namespace {

using ::testing::HasSubstr;

pb::JobConfig Parse(const std::string& text) {
  pb::JobConfig job;
  absl::Status s = ParseTextProto(text, "test", &job);
  EXPECT_TRUE(s.ok()) << s;
  return job;
}

TEST(TableConfigTest, LrDefaultsToOneFtrlTable) {
  auto tables = TableOptionsFromJob(pb::JobConfig());
  ASSERT_TRUE(tables.ok()) << tables.status();
  ASSERT_EQ(tables->size(), 1u);
  const TableOptions& t = (*tables)[0];
  EXPECT_EQ(t.id, 0);
  EXPECT_EQ(t.dim, 1);
  EXPECT_FALSE(t.dense);
  EXPECT_EQ(t.initializer.kind, InitializerKind::kZeros);
  EXPECT_EQ(t.optimizer.kind, OptimizerKind::kFtrl);
  EXPECT_FLOAT_EQ(t.optimizer.ftrl_alpha, 0.05f);
  EXPECT_FLOAT_EQ(t.optimizer.ftrl_beta, 0.001f);
  EXPECT_EQ(t.optimizer.ftrl_l1, 0.0f);
  EXPECT_EQ(t.optimizer.ftrl_l2, 0.0f);
  EXPECT_EQ(t.optimizer.ftrl_weight_decay, 0.0f);
  EXPECT_TRUE(std::isinf(t.optimizer.weight_max));
  EXPECT_EQ(*MaxDelayFromJob(pb::JobConfig()), 0);
}

// Gradients are the batch's mean, so an unset ftrl_beta is 0.001 (1.0 was
// the summed-gradient value of batch 1024): a table that leaves it out
// trains as one that sets the documented default.
TEST(TableConfigTest, UnsetFtrlBetaIsTheMeanGradientDefault) {
  auto unset = TableOptionsFromJob(
      Parse("tables { id: 0 optimizer { kind: KIND_FTRL ftrl_alpha: 0.1 "
            "ftrl_l2: 0.002 ftrl_weight_decay: 1e-4 } }"));
  auto set = TableOptionsFromJob(
      Parse("tables { id: 0 optimizer { kind: KIND_FTRL ftrl_alpha: 0.1 "
            "ftrl_beta: 0.001 ftrl_l2: 0.002 ftrl_weight_decay: 1e-4 } }"));
  ASSERT_TRUE(unset.ok()) << unset.status();
  ASSERT_TRUE(set.ok()) << set.status();
  const OptimizerConfig& u = (*unset)[0].optimizer;
  const OptimizerConfig& s = (*set)[0].optimizer;
  EXPECT_FLOAT_EQ(u.ftrl_beta, 0.001f);
  EXPECT_EQ(u.ftrl_beta, s.ftrl_beta);
  EXPECT_FLOAT_EQ(u.ftrl_weight_decay, 1e-4f);
  // The same steps from the same gradients.
  auto a = Optimizer::Create(u);
  auto b = Optimizer::Create(s);
  ASSERT_TRUE(a.ok() && b.ok());
  float wa = 0, wb = 0, sa[2] = {0, 0}, sb[2] = {0, 0};
  for (float g : {0.3f, -0.1f, 0.05f}) {
    (*a)->Update(&wa, sa, &g, 1);
    (*b)->Update(&wb, sb, &g, 1);
  }
  EXPECT_NE(wa, 0.0f);
  EXPECT_EQ(wa, wb);
  auto bad = TableOptionsFromJob(
      Parse("tables { id: 0 optimizer { ftrl_weight_decay: -1 } }"));
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("ftrl_weight_decay"));
}

TEST(TableConfigTest, FmDefaultsToLinearAndFactorTables) {
  auto tables = TableOptionsFromJob(Parse("model { kind: KIND_FM fm_dim: 4 }"));
  ASSERT_TRUE(tables.ok()) << tables.status();
  ASSERT_EQ(tables->size(), 2u);
  EXPECT_EQ((*tables)[1].id, 1);
  EXPECT_EQ((*tables)[1].dim, 4);
  EXPECT_EQ((*tables)[1].initializer.kind, InitializerKind::kNormal);
  EXPECT_GT((*tables)[1].initializer.scale, 0.0f);
  auto eight = TableOptionsFromJob(Parse("model { kind: KIND_FM }"));
  ASSERT_TRUE(eight.ok());
  EXPECT_EQ((*eight)[1].dim, 8);
}

TEST(TableConfigTest, MlpDefaultsToEmbeddingAndDenseTables) {
  pb::JobConfig job = Parse(
      "model { kind: KIND_MLP embedding_dim: 8 hidden: [32] wide: true } "
      "data { format: FORMAT_CRITEO }");
  auto tables = TableOptionsFromJob(job);
  ASSERT_TRUE(tables.ok()) << tables.status();
  ASSERT_EQ(tables->size(), 3u);
  EXPECT_EQ((*tables)[0].id, kLinearTable);
  EXPECT_EQ((*tables)[1].id, kEmbeddingTable);
  EXPECT_EQ((*tables)[1].dim, 8);
  EXPECT_FALSE((*tables)[1].dense);
  EXPECT_EQ((*tables)[1].initializer.kind, InitializerKind::kNormal);
  const TableOptions& mlp = (*tables)[2];
  EXPECT_EQ(mlp.id, kMlpTable);
  EXPECT_TRUE(mlp.dense);
  EXPECT_EQ(mlp.dim, kMlpRowFloats);
  const size_t params = (39 * 8 + 13) * 32 + 32 + 32 + 1;
  EXPECT_EQ(mlp.num_keys, (params + 63) / 64);
  EXPECT_EQ(mlp.optimizer.kind, OptimizerKind::kAdam);
}

TEST(TableConfigTest, MlpDenseTableTakesItsShapeFromTheLayout) {
  auto tables = TableOptionsFromJob(Parse(R"(
    model { kind: KIND_MLP embedding_dim: 4 hidden: 8 }
    tables { id: 1 dim: 4 }
    tables { id: 2 optimizer { kind: KIND_ADAM } }
  )"));
  ASSERT_TRUE(tables.ok()) << tables.status();
  EXPECT_TRUE((*tables)[1].dense);
  EXPECT_EQ((*tables)[1].num_keys, 1u);  // 4*8 + 8 + 8 + 1 = 49 weights
  auto wrong = TableOptionsFromJob(Parse(R"(
    model { kind: KIND_MLP embedding_dim: 4 hidden: 8 }
    tables { id: 1 dim: 4 }
    tables { id: 2 dim: 64 dense: true num_keys: 7 }
  )"));
  ASSERT_FALSE(wrong.ok());
  EXPECT_THAT(wrong.status().message(), HasSubstr("num_keys: 1"));
  auto bad_dim = TableOptionsFromJob(Parse(R"(
    model { kind: KIND_MLP embedding_dim: 4 }
    tables { id: 1 dim: 3 }
    tables { id: 2 }
  )"));
  ASSERT_FALSE(bad_dim.ok());
  EXPECT_THAT(bad_dim.status().message(), HasSubstr("table 1 has dim 3"));
}

TEST(TableConfigTest, ZeroFieldsTakeDocumentedDefaults) {
  auto tables = TableOptionsFromJob(Parse(R"(
    tables { id: 0 optimizer { kind: KIND_ADAM } }
    tables { id: 1 dim: 3 dense: true num_keys: 5
             optimizer { kind: KIND_ADAGRAD weight_min: -1 weight_max: 2 } }
    tables { id: 2 optimizer { kind: KIND_SGD learning_rate: 0.3
                               weight_decay: 0.25 } }
  )"));
  ASSERT_TRUE(tables.ok()) << tables.status();
  const OptimizerConfig& adam = (*tables)[0].optimizer;
  EXPECT_FLOAT_EQ(adam.learning_rate, 0.001f);
  EXPECT_FLOAT_EQ(adam.beta1, 0.9f);
  EXPECT_FLOAT_EQ(adam.beta2, 0.999f);
  EXPECT_FLOAT_EQ(adam.epsilon, 1e-8f);
  const OptimizerConfig& adagrad = (*tables)[1].optimizer;
  EXPECT_FLOAT_EQ(adagrad.learning_rate, 0.05f);
  EXPECT_EQ(adagrad.weight_min, -1.0f);
  EXPECT_EQ(adagrad.weight_max, 2.0f);
  EXPECT_TRUE((*tables)[1].dense);
  EXPECT_EQ((*tables)[1].num_keys, 5u);
  EXPECT_FLOAT_EQ((*tables)[2].optimizer.learning_rate, 0.3f);
  EXPECT_EQ(adam.weight_decay, 0.0f);
  EXPECT_EQ((*tables)[2].optimizer.weight_decay, 0.25f);
}

TEST(TableConfigTest, BadValuesNameTheirField) {
  struct Case {
    std::string text;
    std::string field;
  };
  for (const Case& c : {
           Case{"tables { id: -1 }", "tables[0].id"},
           Case{"tables { id: 0 } tables { id: 0 }", "tables[1].id"},
           Case{"tables { dim: -2 }", "tables[0].dim"},
           Case{"tables { dense: true }", "tables[0].num_keys"},
           Case{"tables { num_keys: 3 }", "tables[0].num_keys"},
           Case{"tables { initializer { scale: -1 } }",
                "tables[0].initializer.scale"},
           Case{"tables { optimizer { learning_rate: -0.1 } }",
                "tables[0].optimizer.learning_rate"},
           Case{"tables { optimizer { beta1: 1 } }",
                "tables[0].optimizer.beta1"},
           Case{"tables { optimizer { ftrl_l1: nan } }",
                "tables[0].optimizer.ftrl_l1"},
           Case{"tables { optimizer { kind: KIND_ADAM weight_decay: -1 } }",
                "tables[0].optimizer.weight_decay"},
           Case{"tables { optimizer { kind: KIND_FTRL weight_decay: 0.1 } }",
                "tables[0].optimizer.weight_decay"},
           Case{"tables { optimizer { weight_min: 2 weight_max: 1 } }",
                "tables[0].optimizer.weight_min"},
           Case{"tables { id: 1 }", "needs table 0"},
           Case{"tables { dim: 2 }", "table 0 has dim 2"},
           Case{"model { kind: KIND_FM fm_dim: 4 } tables { id: 0 } "
                "tables { id: 1 dim: 8 }",
                "table 1 has dim 8, the model needs 4"},
           Case{"model { fm_dim: -1 }", "model.fm_dim"},
       }) {
    auto tables = TableOptionsFromJob(Parse(c.text));
    EXPECT_EQ(tables.status().code(), absl::StatusCode::kInvalidArgument)
        << c.text;
    EXPECT_THAT(std::string(tables.status().message()), HasSubstr(c.field))
        << c.text;
  }
  pb::JobConfig bad_kind;
  bad_kind.add_tables()->mutable_optimizer()->set_kind(
      static_cast<pb::OptimizerProto::Kind>(9));
  EXPECT_THAT(std::string(TableOptionsFromJob(bad_kind).status().message()),
              HasSubstr("tables[0].optimizer.kind"));
  auto tau = MaxDelayFromJob(Parse("consistency { max_delay: -2 }"));
  EXPECT_EQ(tau.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(tau.status().message()),
              HasSubstr("consistency.max_delay"));
  EXPECT_EQ(*MaxDelayFromJob(Parse("consistency { max_delay: -1 }")), -1);
}

TEST(TableConfigTest, AdmissionAndEvictionFields) {
  auto tables = TableOptionsFromJob(Parse(
      "tables { id: 0 admit_after: 3 ttl_batches: 100 memory_cap_mib: 1.5 }"));
  ASSERT_TRUE(tables.ok()) << tables.status();
  const TableOptions& t = (*tables)[0];
  EXPECT_EQ(t.admit_after, 3u);
  EXPECT_EQ(t.admission_counters, uint64_t{1} << 20);
  EXPECT_EQ(t.ttl_ticks, 100u);
  EXPECT_EQ(t.ttl_unit, TableOptions::TtlUnit::kPushes);
  EXPECT_EQ(t.memory_cap_bytes, 3u << 19);
  auto clocks = TableOptionsFromJob(
      Parse("tables { id: 0 ttl_clocks: 7 admission_counters: 4096 }"));
  ASSERT_TRUE(clocks.ok()) << clocks.status();
  EXPECT_EQ((*clocks)[0].ttl_ticks, 7u);
  EXPECT_EQ((*clocks)[0].ttl_unit, TableOptions::TtlUnit::kClocks);
  EXPECT_EQ((*clocks)[0].admission_counters, 4096u);
}

TEST(TableConfigTest, RefusesBadAdmissionAndEvictionFields) {
  const std::pair<std::string, std::string> cases[] = {
      {"admit_after: -1", "tables[0].admit_after: -1 is not in 0..65535"},
      {"admit_after: 70000", "tables[0].admit_after"},
      {"admission_counters: -5", "tables[0].admission_counters"},
      {"admission_counters: 10", "tables[0].admission_counters: 10 is below"},
      {"ttl_clocks: -2", "tables[0].ttl_clocks: -2 is not in"},
      {"ttl_batches: -1", "tables[0].ttl_batches: -1 is not in"},
      {"ttl_batches: 2000000", "tables[0].ttl_batches"},
      {"ttl_clocks: 1 ttl_batches: 1", "tables[0].ttl_batches: set together"},
      {"memory_cap_mib: -0.5", "tables[0].memory_cap_mib: -0.5 is not in"},
      {"memory_cap_mib: nan", "tables[0].memory_cap_mib"},
  };
  for (const auto& [field, message] : cases) {
    auto tables = TableOptionsFromJob(Parse("tables { id: 0 " + field + " }"));
    ASSERT_FALSE(tables.ok()) << field;
    EXPECT_EQ(tables.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(tables.status().message(), HasSubstr(message)) << field;
  }
  auto dense = TableOptionsFromJob(
      Parse("model { kind: KIND_LR } tables { id: 0 } "
            "tables { id: 5 dense: true num_keys: 10 memory_cap_mib: 1 }"));
  ASSERT_FALSE(dense.ok());
  EXPECT_THAT(dense.status().message(),
              HasSubstr("tables[1].dense: admit_after, ttl_clocks"));
}

}  // namespace
}  // namespace petrel
