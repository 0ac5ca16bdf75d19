#include "tools/bench/workloads.h"

#include "gtest/gtest.h"

namespace petrel {
namespace {

TEST(WorkloadsTest, BuiltinTableHasRawZmqBaselines) {
  const WorkloadTable table = BuiltinWorkloads();
  EXPECT_EQ(table.count("raw_zmq"), 1u);
  EXPECT_EQ(table.count("raw_zmq_latency"), 1u);
  EXPECT_EQ(table.count("raw_zmq_kv"), 1u);
  const std::string described = DescribeWorkloads(table);
  EXPECT_NE(described.find("raw_zmq_latency"), std::string::npos);
}

TEST(WorkloadsTest, ParsesListInOrderWithDuplicates) {
  const WorkloadTable table = BuiltinWorkloads();
  absl::StatusOr<std::vector<std::string>> names =
      ParseWorkloadList("raw_zmq_latency,raw_zmq,raw_zmq_latency", table);
  ASSERT_TRUE(names.ok()) << names.status();
  EXPECT_EQ(*names, (std::vector<std::string>{"raw_zmq_latency", "raw_zmq",
                                              "raw_zmq_latency"}));
}

TEST(WorkloadsTest, RejectsUnknownOrEmptyNames) {
  const WorkloadTable table = BuiltinWorkloads();
  for (const char* list : {"", "raw_zmq,", "nope", "raw_zmq,,raw_zmq"}) {
    absl::StatusOr<std::vector<std::string>> names =
        ParseWorkloadList(list, table);
    EXPECT_EQ(names.status().code(), absl::StatusCode::kInvalidArgument)
        << list;
  }
}

TEST(WorkloadsTest, ValidatesConfigRanges) {
  EXPECT_TRUE(ValidateWorkloadConfig(WorkloadConfig()).ok());
  WorkloadConfig c;
  c.value_bytes = 0;
  EXPECT_EQ(ValidateWorkloadConfig(c).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_NE(ValidateWorkloadConfig(c).message().find("--value_bytes=0"),
            std::string::npos);
  c = WorkloadConfig();
  c.inflight = 70000;
  EXPECT_FALSE(ValidateWorkloadConfig(c).ok());
  c = WorkloadConfig();
  c.num_keys = 0;
  EXPECT_FALSE(ValidateWorkloadConfig(c).ok());
  c = WorkloadConfig();
  c.max_push_part_bytes = -1;
  EXPECT_FALSE(ValidateWorkloadConfig(c).ok());
  c.max_push_part_bytes = 0;  // never split
  EXPECT_TRUE(ValidateWorkloadConfig(c).ok());
  c = WorkloadConfig();
  c.max_pull_part_bytes = -1;
  EXPECT_FALSE(ValidateWorkloadConfig(c).ok());
  c.max_pull_part_bytes = (int64_t{1} << 30) + 1;
  EXPECT_FALSE(ValidateWorkloadConfig(c).ok());
  c.max_pull_part_bytes = 0;  // never split
  EXPECT_TRUE(ValidateWorkloadConfig(c).ok());
  c = WorkloadConfig();
  c.duration_s = -1;
  EXPECT_FALSE(ValidateWorkloadConfig(c).ok());
  c.iterations = 10;  // A duration is not needed when iterations are given.
  EXPECT_TRUE(ValidateWorkloadConfig(c).ok());
  c.iterations = -1;
  EXPECT_FALSE(ValidateWorkloadConfig(c).ok());
}

TEST(WorkloadsTest, RawZmqLatencyPinsValueSizeAndInflight) {
  const WorkloadTable table = BuiltinWorkloads();
  WorkloadConfig c;
  c.value_bytes = 1 << 20;
  c.inflight = 8;
  c.iterations = 20;
  absl::StatusOr<BenchResult> result = table.at("raw_zmq_latency").run(c);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->value_bytes, 4);
  EXPECT_EQ(result->inflight, 1);
  EXPECT_EQ(result->requests, 20);
  EXPECT_TRUE(result->verified);
}

TEST(WorkloadsTest, DimSetsValueBytes) {
  WorkloadConfig c;
  c.num_keys = 100000;
  c.dim = 16;
  ASSERT_TRUE(ApplyDim(/*value_bytes_given=*/false, &c).ok());
  EXPECT_EQ(c.value_bytes, 100000 * 16 * 4);
  EXPECT_TRUE(ValidateWorkloadConfig(c).ok());
  // An explicit --value_bytes must agree.
  EXPECT_TRUE(ApplyDim(/*value_bytes_given=*/true, &c).ok());
  c.value_bytes = 4096;
  absl::Status s = ApplyDim(/*value_bytes_given=*/true, &c);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("--value_bytes=4096 disagrees"), std::string::npos)
      << s;
  // dim 0 leaves value_bytes alone.
  c = WorkloadConfig();
  ASSERT_TRUE(ApplyDim(/*value_bytes_given=*/true, &c).ok());
  EXPECT_EQ(c.value_bytes, 1 << 20);
}

TEST(WorkloadsTest, RejectsBadDimAndKeyFlags) {
  WorkloadConfig c;
  c.num_keys = 1 << 20;
  c.dim = 1 << 10;  // 4 GiB per request
  EXPECT_NE(ApplyDim(false, &c).message().find("over"), std::string::npos);
  c = WorkloadConfig();
  c.dim = -1;
  EXPECT_NE(ApplyDim(false, &c).message().find("--dim=-1"), std::string::npos);
  EXPECT_FALSE(ValidateWorkloadConfig(c).ok());
  c = WorkloadConfig();
  c.key_dist = KeyDist::kUniform;
  c.num_keys = 1000;
  c.value_bytes = 4000;
  c.key_space = 999;
  EXPECT_NE(ValidateWorkloadConfig(c).message().find("--key_space=999"),
            std::string::npos);
  c.key_space = 1000;
  EXPECT_TRUE(ValidateWorkloadConfig(c).ok());
  c.zipf_exponent = 0;
  EXPECT_FALSE(ValidateWorkloadConfig(c).ok());
}

TEST(WorkloadsTest, RawZmqKvMovesKeysAndValues) {
  const WorkloadTable table = BuiltinWorkloads();
  WorkloadConfig c;
  c.num_keys = 1000;
  c.dim = 16;
  ASSERT_TRUE(ApplyDim(false, &c).ok());
  c.iterations = 5;
  absl::StatusOr<BenchResult> result = table.at("raw_zmq_kv").run(c);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->value_bytes, 1000 * 8 + 1000 * 16 * 4);
  EXPECT_EQ(result->keys_per_request, 1000);
  EXPECT_EQ(result->requests, 5);
  EXPECT_TRUE(result->verified);
}

}  // namespace
}  // namespace petrel
