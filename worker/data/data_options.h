// The ReaderOptions a job config (proto/job.proto's DataConfig) asks for:
// the training share of one worker (without the examples
// data.validation_fraction holds out), the validation set and the test
// files, with the
// parsed-example cache of data.cache.
//
// Thread-safe (pure functions).
#ifndef PETREL_WORKER_DATA_DATA_OPTIONS_H_
#define PETREL_WORKER_DATA_DATA_OPTIONS_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include "proto/job.pb.h"
#include "worker/data/reader.h"

namespace petrel {

// Worker `rank` of `num_workers`'s share of data.train. `with_fields` asks
// for Batch::fields and numeric (Model::needs_fields()). With one epoch
// (train.epochs <= 1) MODE_AUTO caches nothing. InvalidArgument naming the
// field for a bad data.cache.
absl::StatusOr<ReaderOptions> TrainReaderOptions(const pb::JobConfig& job,
                                                 int rank, int num_workers,
                                                 bool with_fields);

// InvalidArgument naming the file and what to fix when data.train is
// empty, or a file of data.train or data.test is missing (a shell pattern
// that matched nothing is named so), is not a regular file (a directory),
// cannot be read, or (data.train) is empty (0 bytes): bad input, which
// the worker reports with exit code 2.
absl::Status CheckTrainFiles(const pb::JobConfig& job);

// InvalidArgument naming data.train's files when the job trained on no
// example (`examples` over all workers), e.g. files of blank lines only.
absl::Status CheckTrainedSomething(const pb::JobConfig& job, int64_t examples);

// All of data.test, for one evaluation. Each evaluation opens a new reader,
// so a cache in memory would be dropped unused: MODE_AUTO caches the test
// files in a cache file, and MODE_MEMORY leaves them uncached.
absl::StatusOr<ReaderOptions> TestReaderOptions(const pb::JobConfig& job,
                                                bool with_fields);

// Whether the job has validation data (data.validation or
// data.validation_fraction).
bool HasValidation(const pb::JobConfig& job);

// The validation set, for one evaluation: data.validation's files, or the
// examples of data.train that data.validation_fraction holds out
// (worker/data/holdout.h), cached like the test files. InvalidArgument when
// the job has no validation data.
absl::StatusOr<ReaderOptions> ValidationReaderOptions(const pb::JobConfig& job,
                                                      bool with_fields);

// InvalidArgument naming the file when one of data.validation does not
// exist. (job/job_check.h's CheckValidationConfig checks the fields.)
absl::Status CheckValidationFiles(const pb::JobConfig& job);

}  // namespace petrel

#endif  // PETREL_WORKER_DATA_DATA_OPTIONS_H_
