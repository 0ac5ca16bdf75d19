#include "worker/data/data_files.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include <glob.h>

#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace petrel {
namespace {

bool IsNameChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_';
}

// `entry` with $VAR and ${VAR} replaced by their values.
absl::StatusOr<std::string> ExpandVariables(
    const std::string& entry,
    const std::function<const char*(const char*)>& get_env) {
  std::string out;
  size_t i = 0;
  while (i < entry.size()) {
    if (entry[i] != '$') {
      out.push_back(entry[i++]);
      continue;
    }
    std::string name;
    size_t next = i + 1;
    if (next < entry.size() && entry[next] == '{') {
      const size_t close = entry.find('}', next);
      if (close == std::string::npos) {
        return absl::InvalidArgumentError("'${' without '}'");
      }
      name = entry.substr(next + 1, close - next - 1);
      next = close + 1;
    } else {
      while (next < entry.size() && IsNameChar(entry[next])) ++next;
      name = entry.substr(i + 1, next - i - 1);
    }
    if (name.empty() || !std::all_of(name.begin(), name.end(), IsNameChar)) {
      return absl::InvalidArgumentError(
          absl::StrCat("'$' is not followed by a variable name"));
    }
    const char* value = get_env(name.c_str());
    if (value == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("$", name, " is not set on this host"));
    }
    out += value;
    i = next;
  }
  return out;
}

bool IsPattern(const std::string& path) {
  return path.find_first_of("*?[") != std::string::npos;
}

absl::Status Expand(const std::function<const char*(const char*)>& get_env,
                    const char* field,
                    google::protobuf::RepeatedPtrField<std::string>* files) {
  std::vector<std::string> expanded;
  for (const std::string& entry : *files) {
    absl::StatusOr<std::string> path = ExpandVariables(entry, get_env);
    if (!path.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "data.", field, ": '", entry, "': ", path.status().message()));
    }
    if (!IsPattern(*path)) {
      expanded.push_back(*std::move(path));
      continue;
    }
    glob_t matches = {};
    const int result = glob(path->c_str(), GLOB_ERR, nullptr, &matches);
    for (size_t m = 0; result == 0 && m < matches.gl_pathc; ++m) {
      expanded.emplace_back(matches.gl_pathv[m]);
    }
    globfree(&matches);
    if (result == GLOB_NOMATCH) {
      return absl::InvalidArgumentError(absl::StrCat(
          "data.", field, ": '", entry, "' matches no file",
          *path == entry ? "" : absl::StrCat(" (", *path, " here)")));
    }
    if (result != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "data.", field, ": cannot list the files of '", *path, "'"));
    }
  }
  files->Clear();
  for (std::string& file : expanded) files->Add(std::move(file));
  return absl::OkStatus();
}

}  // namespace

absl::Status ExpandDataFiles(
    const std::function<const char*(const char*)>& get_env,
    pb::DataConfig* data) {
  absl::Status s = Expand(get_env, "train", data->mutable_train());
  if (!s.ok()) return s;
  return Expand(get_env, "test", data->mutable_test());
}

}  // namespace petrel
