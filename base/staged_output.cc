#include "base/staged_output.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <sys/stat.h>

#include "absl/strings/str_cat.h"

namespace petrel {

std::string StagingPath(const std::string& output) {
  struct stat st;
  if (stat(output.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) return output;
  return output + ".tmp";
}

absl::Status CommitStaged(const std::string& staging,
                          const std::string& output) {
  if (staging == output) return absl::OkStatus();
  if (std::rename(staging.c_str(), output.c_str()) != 0) {
    return absl::UnavailableError(absl::StrCat(
        "cannot rename ", staging, " to ", output, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

void DiscardStaged(const std::string& staging, const std::string& output) {
  if (staging != output) std::remove(staging.c_str());
}

}  // namespace petrel
