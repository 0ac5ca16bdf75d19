#include "worker/data_options.h"

#include "gtest/gtest.h"

namespace petrel {
namespace {

pb::JobConfig Job() {
  pb::JobConfig job;
  job.mutable_data()->add_train("train.txt");
  job.mutable_data()->add_test("test.txt");
  job.mutable_data()->set_format(pb::DataConfig::FORMAT_CRITEO);
  job.mutable_train()->set_epochs(3);
  return job;
}

TEST(DataOptionsTest, DefaultsToAnAutomaticCacheOfOneGiB) {
  absl::StatusOr<ReaderOptions> ro = TrainReaderOptions(Job(), 1, 3, true);
  ASSERT_TRUE(ro.ok()) << ro.status();
  EXPECT_EQ(ro->format, DataFormat::kCriteo);
  EXPECT_EQ(ro->files, std::vector<std::string>{"train.txt"});
  EXPECT_EQ(ro->worker_rank, 1);
  EXPECT_EQ(ro->num_workers, 3);
  EXPECT_TRUE(ro->with_fields && ro->with_numeric);
  EXPECT_EQ(ro->cache.mode, CacheMode::kAuto);
  EXPECT_EQ(ro->cache.memory_budget_bytes, int64_t{1} << 30);
  EXPECT_EQ(ro->cache.dir, "");
}

TEST(DataOptionsTest, OneEpochCachesNothingUnlessAsked) {
  pb::JobConfig job = Job();
  job.mutable_train()->set_epochs(1);
  EXPECT_EQ(TrainReaderOptions(job, 0, 1, false)->cache.mode, CacheMode::kOff);
  job.mutable_data()->mutable_cache()->set_mode(pb::DataCacheConfig::MODE_FILE);
  EXPECT_EQ(TrainReaderOptions(job, 0, 1, false)->cache.mode, CacheMode::kFile);
}

TEST(DataOptionsTest, TestFilesGoToACacheFileOrNone) {
  pb::JobConfig job = Job();
  job.mutable_data()->mutable_cache()->set_dir("/cache");
  absl::StatusOr<ReaderOptions> ro = TestReaderOptions(job, false);
  ASSERT_TRUE(ro.ok()) << ro.status();
  EXPECT_EQ(ro->files, std::vector<std::string>{"test.txt"});
  EXPECT_EQ(ro->cache.mode, CacheMode::kFile);
  EXPECT_EQ(ro->cache.dir, "/cache");
  job.mutable_data()->mutable_cache()->set_mode(
      pb::DataCacheConfig::MODE_MEMORY);
  EXPECT_EQ(TestReaderOptions(job, false)->cache.mode, CacheMode::kOff);
  EXPECT_EQ(TrainReaderOptions(job, 0, 1, false)->cache.mode,
            CacheMode::kMemory);
}

TEST(DataOptionsTest, RejectsABadBudget) {
  pb::JobConfig job = Job();
  job.mutable_data()->mutable_cache()->set_memory_budget_mib(-5);
  absl::Status status = TrainReaderOptions(job, 0, 1, false).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("data.cache.memory_budget_mib"),
            std::string::npos);
  job.mutable_data()->mutable_cache()->set_memory_budget_mib(64);
  EXPECT_EQ(TrainReaderOptions(job, 0, 1, false)->cache.memory_budget_bytes,
            int64_t{64} << 20);
}

}  // namespace
}  // namespace petrel
