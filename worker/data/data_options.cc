#include "worker/data/data_options.h"

#include <cerrno>
#include <cstring>
#include <string>

#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include "base/status_macros.h"
#include "job/criteo.h"
#include "job/crosses_config.h"

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
  if (job.data().max_abs_value() > 0) {
    ro.max_abs_value = job.data().max_abs_value();
  }
  ro.clip_out_of_range =
      job.data().out_of_range() == pb::DataConfig::OUT_OF_RANGE_CLIP;
  ro.with_fields = ro.with_numeric = with_fields;
  ro.crosses = CrossPairs(job.model());
  ro.cross_base_fields = kCriteoFields;
  return ro;
}

// For files read whole at each evaluation: a cache file, not memory.
absl::Status EvalCache(const pb::JobConfig& job, ReaderOptions* ro) {
  absl::StatusOr<CacheOptions> cache = CacheFromConfig(job.data().cache());
  if (!cache.ok()) return cache.status();
  ro->cache = *cache;
  if (ro->cache.mode == CacheMode::kAuto) ro->cache.mode = CacheMode::kFile;
  if (ro->cache.mode == CacheMode::kMemory) ro->cache.mode = CacheMode::kOff;
  return absl::OkStatus();
}

// InvalidArgument saying what is wrong with `file` of config field `field`
// when it is not a regular file this process can read.
absl::Status CheckReadableFile(const char* field, const std::string& file) {
  struct stat st;
  if (stat(file.c_str(), &st) != 0) {
    const int error = errno;
    const bool pattern = file.find_first_of("*?[") != std::string::npos;
    return absl::InvalidArgumentError(absl::StrCat(
        field, ": cannot read ", file, ": ", strerror(error),
        pattern && error == ENOENT
            ? " (a shell pattern that matched no file? name the files)"
            : " (fix the path or the file's permissions)"));
  }
  if (S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ": ", file, " is a directory; name the files in it"));
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": ", file, " is not a regular file"));
  }
  if (access(file.c_str(), R_OK) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": cannot read ", file, ": ", strerror(errno),
                     " (fix the file's permissions)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ReaderOptions> TrainReaderOptions(const pb::JobConfig& job,
                                                 int rank, int num_workers,
                                                 bool with_fields) {
  ReaderOptions ro = Common(job, with_fields);
  ro.files.assign(job.data().train().begin(), job.data().train().end());
  ro.worker_rank = rank;
  ro.num_workers = num_workers;
  if (job.data().validation_fraction() > 0) {
    ro.holdout =
        HoldoutOptions{HoldoutPart::kTrain, job.data().validation_fraction(),
                       job.data().validation_seed()};
  }
  absl::StatusOr<CacheOptions> cache = CacheFromConfig(job.data().cache());
  if (!cache.ok()) return cache.status();
  ro.cache = *cache;
  // One pass reads the share once: keeping it would cost memory for nothing.
  if (job.train().epochs() <= 1 && ro.cache.mode == CacheMode::kAuto) {
    ro.cache.mode = CacheMode::kOff;
  }
  return ro;
}

absl::Status CheckTrainFiles(const pb::JobConfig& job) {
  if (job.data().train().empty()) {
    return absl::InvalidArgumentError(
        "data.train: no training files (--train)");
  }
  for (const std::string& file : job.data().train()) {
    PETREL_RETURN_IF_ERROR(CheckReadableFile("data.train", file));
    struct stat st;
    if (stat(file.c_str(), &st) == 0 && st.st_size == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("data.train: ", file, " is empty"));
    }
  }
  for (const std::string& file : job.data().test()) {
    PETREL_RETURN_IF_ERROR(CheckReadableFile("data.test", file));
  }
  return absl::OkStatus();
}

absl::Status CheckTrainedSomething(const pb::JobConfig& job, int64_t examples) {
  if (examples > 0) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("data.train: no training examples in ",
                   absl::StrJoin(job.data().train(), ", ")));
}

absl::StatusOr<ReaderOptions> TestReaderOptions(const pb::JobConfig& job,
                                                bool with_fields) {
  ReaderOptions ro = Common(job, with_fields);
  ro.files.assign(job.data().test().begin(), job.data().test().end());
  absl::Status s = EvalCache(job, &ro);
  if (!s.ok()) return s;
  return ro;
}

bool HasValidation(const pb::JobConfig& job) {
  return !job.data().validation().empty() ||
         job.data().validation_fraction() > 0;
}

absl::StatusOr<ReaderOptions> ValidationReaderOptions(const pb::JobConfig& job,
                                                      bool with_fields) {
  ReaderOptions ro = Common(job, with_fields);
  if (!job.data().validation().empty()) {
    ro.files.assign(job.data().validation().begin(),
                    job.data().validation().end());
  } else if (job.data().validation_fraction() > 0) {
    ro.files.assign(job.data().train().begin(), job.data().train().end());
    ro.holdout =
        HoldoutOptions{HoldoutPart::kHeldOut, job.data().validation_fraction(),
                       job.data().validation_seed()};
  } else {
    return absl::InvalidArgumentError(
        "no validation data: set data.validation or "
        "data.validation_fraction");
  }
  absl::Status s = EvalCache(job, &ro);
  if (!s.ok()) return s;
  return ro;
}

absl::Status CheckValidationFiles(const pb::JobConfig& job) {
  for (const std::string& file : job.data().validation()) {
    struct stat st;
    if (stat(file.c_str(), &st) != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("data.validation: ", file, " does not exist"));
    }
  }
  return absl::OkStatus();
}

}  // namespace petrel
