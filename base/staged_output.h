// Writing an output file so that readers never see half of it: the bytes go
// to FILE.tmp, which is renamed over FILE once complete. That is only right
// for a regular file: renaming over /dev/null, a FIFO or a terminal would
// replace the device node with a regular file (for every program on the
// machine), so output to anything that exists and is not a regular file
// is written in place.
//
// Thread-safe (no state; the file system is the caller's concern).
#ifndef PETREL_BASE_STAGED_OUTPUT_H_
#define PETREL_BASE_STAGED_OUTPUT_H_

#include <string>

#include "absl/status/status.h"

namespace petrel {

// Where to write the bytes meant for `output`: `output` + ".tmp" when
// `output` is missing or a regular file (or a link to one), otherwise
// `output` itself.
std::string StagingPath(const std::string& output);

// Moves a complete staging file into place: renames `staging` to `output`
// unless they are the same path. Unavailable naming both on failure.
absl::Status CommitStaged(const std::string& staging,
                          const std::string& output);

// Removes an incomplete staging file; does nothing when the output is
// written in place (`staging` == `output`), so a failed write to
// /dev/null never removes the device.
void DiscardStaged(const std::string& staging, const std::string& output);

}  // namespace petrel

#endif  // PETREL_BASE_STAGED_OUTPUT_H_
