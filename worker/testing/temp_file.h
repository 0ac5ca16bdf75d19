// WriteTempFile: a file with given contents under the test temp directory,
// for the reader tests (test-only library petrel_worker_testing).
//
// Thread safety: call it from the test's own thread (it reads GoogleTest's
// current test).
#ifndef PETREL_WORKER_TESTING_TEMP_FILE_H_
#define PETREL_WORKER_TESTING_TEMP_FILE_H_

#include <string>

#include "absl/strings/string_view.h"

namespace petrel {

// Writes `content` to a file named after the running test, this process
// and `name`, so parallel tests do not collide; returns its path. The file,
// and files beside it named PATH.* (parsed-example caches), are removed when
// the test program exits.
std::string WriteTempFile(absl::string_view name, absl::string_view content);

}  // namespace petrel

#endif  // PETREL_WORKER_TESTING_TEMP_FILE_H_
