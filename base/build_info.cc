#include "base/build_info.h"

#include "absl/strings/str_cat.h"

#include "base/build_info_values.h"

namespace petrel {

BuildInfo GetBuildInfo() {
  BuildInfo info;
  info.version = PETREL_VERSION_STRING;
  info.git_commit = PETREL_GIT_COMMIT;
  info.build_type = PETREL_BUILD_TYPE;
  info.cuda = PETREL_BUILD_WITH_CUDA != 0;
  return info;
}

std::string VersionLine(absl::string_view program) {
  const BuildInfo info = GetBuildInfo();
  std::string line = absl::StrCat(program, " ", info.version);
  absl::StrAppend(&line, " (commit ", info.git_commit, ", ", info.build_type);
  absl::StrAppend(&line, ", CUDA ", info.cuda ? "on" : "off", ")");
  return line;
}

}  // namespace petrel
