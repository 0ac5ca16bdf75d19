// The generated data and the FTRL logistic-regression job that the
// multi-process training tests (checkpoints, worker deaths) share.
#ifndef PETREL_TESTS_HARNESS_LR_JOB_H_
#define PETREL_TESTS_HARNESS_LR_JOB_H_

#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace petrel {

// Runs `bin_dir`/petrel-datagen to write `train_examples` training and
// 10,000 test examples (libsvm, seed 7, 2^16 feature indices) to
// `dir`/train.svm and `dir`/test.svm.
absl::Status GenerateLrData(const std::string& bin_dir, const std::string& dir,
                            int train_examples, absl::Duration timeout);
// Empties `dir` (making it if needed), then GenerateLrData into it.
absl::Status FreshLrData(const std::string& bin_dir, const std::string& dir,
                         int train_examples, absl::Duration timeout);

// The job config's text up to its train section: 2 servers,
// `num_workers` workers, LR with FTRL (deploy/examples/lr.textproto's
// settings), consistency.max_delay `max_delay`,
// the data GenerateLrData wrote in `dir`.
std::string LrJobText(const std::string& dir, int num_workers, int max_delay);
// The same with `num_servers` servers.
std::string LrJobTextWithServers(const std::string& dir, int num_servers,
                                 int num_workers, int max_delay);

}  // namespace petrel

#endif  // PETREL_TESTS_HARNESS_LR_JOB_H_
