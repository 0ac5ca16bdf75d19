// ExpandDataFiles: the file names of data.train and data.test as the worker
// on this host sees them. Each entry may name environment variables
// ($VAR or ${VAR}), so that the data can sit at a different path on each
// host (e.g. ${SLURM_TMPDIR}/train.svm, $HOME/data/part-*), and may be a
// glob pattern (*, ? and [...], as the shell has them), replaced by the
// files it matches in sorted order. Entries without either are kept as
// they are.
//
// Every worker must see the same list of files with the same sizes (a
// shared filesystem, or the same copy on every host): the files are split
// between the workers by byte ranges of their concatenation
// (worker/data/reader.h).
//
// Thread-safe (a pure function of its arguments and the filesystem).
#ifndef PETREL_WORKER_DATA_DATA_FILES_H_
#define PETREL_WORKER_DATA_DATA_FILES_H_

#include <functional>

#include "absl/status/status.h"

#include "proto/job.pb.h"

namespace petrel {

// Expands every entry of data->train and data->test in place.
// `get_env` looks a variable up (std::getenv in petrel-worker).
// InvalidArgument naming the field and entry for an unset variable, a
// malformed ${...}, or a pattern that matches no file.
absl::Status ExpandDataFiles(
    const std::function<const char*(const char*)>& get_env,
    pb::DataConfig* data);

}  // namespace petrel

#endif  // PETREL_WORKER_DATA_DATA_FILES_H_
