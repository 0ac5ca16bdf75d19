// What this build of Petrel is: its version (the one in the top-level
// CMakeLists.txt's project()), the git commit it was configured from, its
// CMake build type and whether the CUDA kernels are compiled in. The
// values are fixed when CMake configures the tree (a generated header,
// base/build_info_values.h); every binary prints them for --version.
//
// Thread safety: every function is thread-safe (they read constants).
#ifndef PETREL_BASE_BUILD_INFO_H_
#define PETREL_BASE_BUILD_INFO_H_

#include <string>

#include "absl/strings/string_view.h"

namespace petrel {

struct BuildInfo {
  // "MAJOR.MINOR.PATCH", e.g. "0.1.0".
  absl::string_view version;
  // The commit's abbreviated hash (12 hex digits) when the source tree was
  // a git checkout at configure time, the value given with
  // -DPETREL_GIT_COMMIT=..., or "unknown".
  absl::string_view git_commit;
  // CMAKE_BUILD_TYPE, e.g. "RelWithDebInfo"; "none" when it was empty.
  absl::string_view build_type;
  // True when the CUDA kernels are compiled in (PETREL_HAVE_CUDA). Whether
  // a GPU is present is a run-time question this does not answer.
  bool cuda = false;
};

// The values of this build.
BuildInfo GetBuildInfo();

// One line for --version, without a trailing newline:
//   "petrel-server 0.1.0 (commit 2912bdc1a2b3, RelWithDebInfo, CUDA off)"
// `program` is the binary's name as users type it (not argv[0]'s path).
std::string VersionLine(absl::string_view program);

}  // namespace petrel

#endif  // PETREL_BASE_BUILD_INFO_H_
