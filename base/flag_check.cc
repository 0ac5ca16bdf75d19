#include "base/flag_check.h"

#include <cstdio>
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

bool FlagIsSet(const char* name) {
  gflags::CommandLineFlagInfo info;
  return gflags::GetCommandLineFlagInfo(name, &info) && !info.is_default;
}

int ParseToolCommandLine(int* argc, char*** argv, const char* help_filter) {
  const std::string program = (*argv)[0];
  const std::string name = program.substr(program.rfind('/') + 1);
  if (absl::Status s = CheckCommandLineFlags(*argc, *argv); !s.ok()) {
    std::fprintf(stderr, "%s: %s (see --help)\n", name.c_str(),
                 std::string(s.message()).c_str());
    return 2;
  }
  gflags::ParseCommandLineNonHelpFlags(argc, argv, /*remove_flags=*/true);
  std::string help;
  if (gflags::GetCommandLineOption("help", &help) && help == "true") {
    gflags::ShowUsageWithFlagsRestrict(program.c_str(), help_filter);
    return 0;
  }
  gflags::HandleCommandLineHelpFlags();  // --helpfull, --version, ...
  if (*argc > 1) {
    std::fprintf(stderr, "%s: unexpected argument '%s' (see --help)\n",
                 name.c_str(), (*argv)[1]);
    return 2;
  }
  return -1;
}

}  // namespace petrel
