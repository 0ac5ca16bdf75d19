#include "base/flag_check.h"

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "gflags/gflags.h"

namespace petrel {
namespace {

// gflags flags whose "value" is processed rather than stored; setting them
// here would read files or the environment twice, so only their names are
// checked.
bool IsSpecialFlag(absl::string_view name) {
  return name == "flagfile" || name == "fromenv" || name == "tryfromenv";
}

}  // namespace

absl::Status CheckCommandLineFlags(int argc, const char* const* argv) {
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (arg == "--") break;
    if (arg.size() < 2 || arg[0] != '-') continue;  // Positional argument.
    arg.remove_prefix(arg[1] == '-' ? 2 : 1);
    const size_t eq = arg.find('=');
    const std::string name(arg.substr(0, eq));
    gflags::CommandLineFlagInfo info;
    if (!gflags::GetCommandLineFlagInfo(name.c_str(), &info)) {
      // "--nofoo" turns off the bool flag "foo".
      if (eq == absl::string_view::npos && absl::StartsWith(name, "no") &&
          gflags::GetCommandLineFlagInfo(name.c_str() + 2, &info) &&
          info.type == "bool") {
        continue;
      }
      return absl::InvalidArgumentError(absl::StrCat("unknown flag --", name));
    }
    std::string value;
    if (eq != absl::string_view::npos) {
      value = std::string(arg.substr(eq + 1));
    } else if (info.type == "bool") {
      continue;
    } else if (i + 1 < argc) {
      value = argv[++i];  // gflags also takes the next argument as the value.
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("flag --", name, " is missing its value"));
    }
    if (IsSpecialFlag(name)) continue;
    if (gflags::SetCommandLineOption(name.c_str(), value.c_str()).empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", name, "=", value, " is not a valid ", info.type));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckFlagRange(absl::string_view flag, int64_t value, int64_t min,
                            int64_t max) {
  if (value >= min && value <= max) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("--", flag, ": ", value, " is not in ", min, "..", max));
}

bool FlagIsSet(const char* name) {
  gflags::CommandLineFlagInfo info;
  return gflags::GetCommandLineFlagInfo(name, &info) && !info.is_default;
}

}  // namespace petrel
