#include "worker/data/data_options.h"

#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

#include "worker/data/reader.h"
#include "worker/testing/temp_file.h"

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

TEST(DataOptionsTest, ValidationIsTheFilesOrTheHeldOutFraction) {
  pb::JobConfig job = Job();
  EXPECT_FALSE(HasValidation(job));
  EXPECT_TRUE(
      absl::IsInvalidArgument(ValidationReaderOptions(job, false).status()));
  job.mutable_data()->add_validation("valid.txt");
  absl::StatusOr<ReaderOptions> ro = ValidationReaderOptions(job, false);
  ASSERT_TRUE(ro.ok()) << ro.status();
  EXPECT_EQ(ro->files, std::vector<std::string>{"valid.txt"});
  EXPECT_EQ(ro->holdout.part, HoldoutPart::kAll);
  EXPECT_EQ(TrainReaderOptions(job, 0, 1, false)->holdout.part,
            HoldoutPart::kAll);
  EXPECT_NE(CheckValidationFiles(job).message().find("valid.txt"),
            std::string::npos);
}

// Read through real readers, the training part of every worker's share and
// the held-out part of all the files are disjoint and make up the data.
TEST(DataOptionsTest, HeldOutFractionSplitsTheTrainingFiles) {
  std::string text;
  for (int i = 0; i < 2000; ++i) {
    absl::StrAppend(&text, i % 2, " ", i + 1, ":1\n");
  }
  pb::JobConfig job;
  job.mutable_data()->add_train(WriteTempFile("holdout_train.svm", text));
  job.mutable_data()->set_validation_fraction(0.2f);
  job.mutable_data()->set_validation_seed(5);
  job.mutable_data()->mutable_cache()->set_mode(pb::DataCacheConfig::MODE_OFF);
  ASSERT_TRUE(CheckValidationFiles(job).ok());
  // Each example has its own feature index: the examples read, by index.
  auto read = [](const ReaderOptions& ro, std::multiset<uint64_t>* seen) {
    absl::StatusOr<std::unique_ptr<Reader>> reader = OpenReader(ro);
    ASSERT_TRUE(reader.ok()) << reader.status();
    Batch batch;
    while (true) {
      absl::StatusOr<bool> more = (*reader)->Next(100, &batch);
      ASSERT_TRUE(more.ok()) << more.status();
      if (!*more) break;
      for (size_t i = 0; i < batch.size(); ++i) {
        seen->insert(batch.keys[batch.offsets[i]]);
      }
    }
  };
  std::multiset<uint64_t> train, held;
  for (int rank = 0; rank < 3; ++rank) {
    absl::StatusOr<ReaderOptions> ro = TrainReaderOptions(job, rank, 3, false);
    ASSERT_TRUE(ro.ok()) << ro.status();
    read(*ro, &train);
  }
  absl::StatusOr<ReaderOptions> vo = ValidationReaderOptions(job, false);
  ASSERT_TRUE(vo.ok()) << vo.status();
  read(*vo, &held);
  EXPECT_EQ(train.size() + held.size(), 2000u);
  EXPECT_NEAR(static_cast<double>(held.size()), 400, 90);
  for (uint64_t key : held) EXPECT_EQ(train.count(key), 0u) << key;
}

}  // namespace
}  // namespace petrel
