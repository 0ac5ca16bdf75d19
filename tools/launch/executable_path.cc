#include "tools/launch/executable_path.h"

#include <sys/stat.h>
#include <unistd.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace petrel {

bool IsExecutableFile(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
         access(path.c_str(), X_OK) == 0;
}

std::optional<std::string> FindOnSearchPath(std::string_view name,
                                            std::string_view search_path) {
  const absl::string_view file(name.data(), name.size());
  for (absl::string_view dir : absl::StrSplit(
           absl::string_view(search_path.data(), search_path.size()), ':')) {
    std::string candidate = absl::StrCat(dir.empty() ? "." : dir, "/", file);
    if (IsExecutableFile(candidate)) return candidate;
  }
  return std::nullopt;
}

absl::StatusOr<std::string> ResolveCommand(const std::string& name,
                                           std::string_view search_path,
                                           const std::string& bin_dir) {
  if (name.find('/') != std::string::npos) return name;
  if (!search_path.empty()) {
    if (std::optional<std::string> found =
            FindOnSearchPath(name, search_path)) {
      return *found;
    }
  }
  std::string in_bin_dir = absl::StrCat(bin_dir, "/", name);
  if (IsExecutableFile(in_bin_dir)) return in_bin_dir;
  return absl::NotFoundError(absl::StrCat("command '", name,
                                          "' is neither on PATH nor in "
                                          "bin_dir '",
                                          bin_dir, "'"));
}

}  // namespace petrel
