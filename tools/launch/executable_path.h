// Helpers that find executables the way a shell does, shared by Subprocess
// (to resolve argv[0] before fork) and petrel-launch (to find the worker
// command on PATH or in --bin_dir). All functions are thread-safe.

#ifndef PETREL_TOOLS_LAUNCH_EXECUTABLE_PATH_H_
#define PETREL_TOOLS_LAUNCH_EXECUTABLE_PATH_H_

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace petrel {

// True when `path` names a regular file this process may execute.
bool IsExecutableFile(const std::string& path);

// Returns the first executable "dir/name" for dir in the colon-separated
// `search_path` (an empty dir means "."), or nullopt.
std::optional<std::string> FindOnSearchPath(std::string_view name,
                                            std::string_view search_path);

// Resolves a job command: a name containing '/' is returned unchanged;
// otherwise the match on `search_path`, else `bin_dir/name` if executable.
// Returns NotFound naming the command when neither has it.
absl::StatusOr<std::string> ResolveCommand(const std::string& name,
                                           std::string_view search_path,
                                           const std::string& bin_dir);

}  // namespace petrel

#endif  // PETREL_TOOLS_LAUNCH_EXECUTABLE_PATH_H_
