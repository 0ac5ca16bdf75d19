#include "worker/data_options.h"

#include "absl/strings/str_cat.h"

namespace petrel {
namespace {

absl::StatusOr<CacheOptions> CacheFromConfig(const pb::DataCacheConfig& c) {
  CacheOptions cache;
  switch (c.mode()) {
    case pb::DataCacheConfig::MODE_AUTO:
      cache.mode = CacheMode::kAuto;
      break;
    case pb::DataCacheConfig::MODE_OFF:
      cache.mode = CacheMode::kOff;
      break;
    case pb::DataCacheConfig::MODE_MEMORY:
      cache.mode = CacheMode::kMemory;
      break;
    case pb::DataCacheConfig::MODE_FILE:
      cache.mode = CacheMode::kFile;
      break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("data.cache.mode = ", c.mode(), " is unknown"));
  }
  const int32_t mib = c.memory_budget_mib() == 0 ? 1024 : c.memory_budget_mib();
  if (mib < 1 || mib > (1 << 20)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "data.cache.memory_budget_mib = ", mib, " is not in 1..2^20"));
  }
  cache.memory_budget_bytes = int64_t{mib} << 20;
  cache.dir = c.dir();
  return cache;
}

ReaderOptions Common(const pb::JobConfig& job, bool with_fields) {
  ReaderOptions ro;
  ro.format = job.data().format() == pb::DataConfig::FORMAT_CRITEO
                  ? DataFormat::kCriteo
                  : DataFormat::kLibsvm;
  ro.skip_malformed = job.data().skip_malformed();
  ro.with_fields = ro.with_numeric = with_fields;
  return ro;
}

}  // namespace

absl::StatusOr<ReaderOptions> TrainReaderOptions(const pb::JobConfig& job,
                                                 int rank, int num_workers,
                                                 bool with_fields) {
  ReaderOptions ro = Common(job, with_fields);
  ro.files.assign(job.data().train().begin(), job.data().train().end());
  ro.worker_rank = rank;
  ro.num_workers = num_workers;
  absl::StatusOr<CacheOptions> cache = CacheFromConfig(job.data().cache());
  if (!cache.ok()) return cache.status();
  ro.cache = *cache;
  // One pass reads the share once: keeping it would cost memory for nothing.
  if (job.train().epochs() <= 1 && ro.cache.mode == CacheMode::kAuto) {
    ro.cache.mode = CacheMode::kOff;
  }
  return ro;
}

absl::StatusOr<ReaderOptions> TestReaderOptions(const pb::JobConfig& job,
                                                bool with_fields) {
  ReaderOptions ro = Common(job, with_fields);
  ro.files.assign(job.data().test().begin(), job.data().test().end());
  absl::StatusOr<CacheOptions> cache = CacheFromConfig(job.data().cache());
  if (!cache.ok()) return cache.status();
  ro.cache = *cache;
  if (ro.cache.mode == CacheMode::kAuto) ro.cache.mode = CacheMode::kFile;
  if (ro.cache.mode == CacheMode::kMemory) ro.cache.mode = CacheMode::kOff;
  return ro;
}

}  // namespace petrel
