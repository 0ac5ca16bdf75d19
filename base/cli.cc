#include "base/cli.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <utility>
#include <vector>

#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "gflags/gflags.h"
#include "glog/logging.h"

#include "base/build_info.h"
#include "base/flag_check.h"

namespace petrel {
namespace {

// The groups --help shows, in this order, by the file that defines their
// flags. Flags of files not listed here (a user's program) come first, as
// "Program".
struct Group {
  const char* file_suffix;
  const char* title;
};
constexpr Group kGroups[] = {
    {"worker/train/worker_flags.cc", "Worker jobs"},
    {"tools/bench/bench_main.cc", "Benchmark"},
    {"tools/datagen/datagen_main.cc", "Data generation"},
    {"tools/launch/launch_main.cc", "Launcher"},
    {"tools/predict/predict_main.cc", "Prediction"},
    {"tools/export/export_main.cc", "Export"},
    {"tools/petrelctl/petrelctl_main.cc", "Admin client"},
    {"job/job_flags.cc", "Job config and checkpoints"},
    {"scheduler/scheduler_flags.cc",
     "Scheduler (petrel-scheduler, or a node program run with "
     "DMLC_ROLE=scheduler)"},
    {"server/server_flags.cc",
     "Server (petrel-server, or a node program run with DMLC_ROLE=server)"},
    {"node/node_flags.cc", "Cluster (every node)"},
    {"node/daemon_main.cc", "Process"},
};
constexpr char kProgram[] = "Program";
constexpr char kLogging[] = "Logging";

// glog's and gflags' own source files.
bool IsLibraryFile(absl::string_view file) {
  for (absl::string_view name :
       {"src/logging.cc", "src/utilities.cc", "src/vlog_is_on.cc",
        "src/raw_logging.cc", "src/signalhandler.cc", "src/gflags.cc",
        "src/gflags_reporting.cc", "src/gflags_completions.cc"}) {
    if (absl::EndsWith(file, name)) return true;
  }
  return false;
}

int GroupRank(absl::string_view title) {
  if (title == kProgram) return -1;
  int rank = 0;
  for (const Group& g : kGroups) {
    if (title == g.title) return rank;
    ++rank;
  }
  return rank;  // Logging last.
}

// Appends `text` wrapped at 78 columns, each line indented by 6 spaces.
void AppendWrapped(absl::string_view text, std::string* out) {
  std::string line = "     ";
  for (absl::string_view word :
       absl::StrSplit(text, ' ', absl::SkipWhitespace())) {
    if (line.size() + 1 + word.size() > 78 && line.size() > 5) {
      absl::StrAppend(out, line, "\n");
      line = "     ";
    }
    absl::StrAppend(&line, " ", word);
  }
  if (line.size() > 5) absl::StrAppend(out, line, "\n");
}

std::string FlagLine(const gflags::CommandLineFlagInfo& f) {
  std::string value = f.default_value;
  if (f.type == "string") value = absl::StrCat("\"", value, "\"");
  return absl::StrCat("  --", f.name, "=", value, "  (", f.type, ")\n");
}

// Prints "PROGRAM: message (see --help)"; returns 2.
int UsageError(const CliOptions& options, absl::string_view message) {
  std::fprintf(stderr, "%s: %s (see --help)\n", options.name.c_str(),
               std::string(message).c_str());
  return 2;
}

bool BoolFlag(const char* name) {
  std::string value;
  return gflags::GetCommandLineOption(name, &value) && value == "true";
}

// Logs to files in --log_dir, or to stderr without it. Returns -1 or 2.
int SetUpLogging(const CliOptions& options, const char* argv0) {
  std::string log_dir;
  gflags::GetCommandLineOption("log_dir", &log_dir);
  if (!log_dir.empty()) {
    if (access(log_dir.c_str(), W_OK | X_OK) != 0) {
      return UsageError(options, absl::StrCat("--log_dir=", log_dir,
                                              " is not a writable directory: ",
                                              std::strerror(errno)));
    }
  } else if (!FlagIsSet("logtostderr")) {
    gflags::SetCommandLineOption("logtostderr", "true");
  }
  if (!google::IsGoogleLoggingInitialized()) {
    google::InitGoogleLogging(argv0);
  }
  return -1;
}

}  // namespace

std::string FlagGroup(absl::string_view file, absl::string_view name) {
  if (IsLibraryFile(file)) {
    if (name == "log_dir" || name == "v" || name == "vmodule") return kLogging;
    return "";
  }
  for (const Group& g : kGroups) {
    if (absl::EndsWith(file, g.file_suffix)) return g.title;
  }
  return kProgram;
}

std::string HelpText(const CliOptions& options) {
  std::vector<gflags::CommandLineFlagInfo> flags;
  gflags::GetAllFlags(&flags);
  std::map<std::pair<int, std::string>,
           std::vector<const gflags::CommandLineFlagInfo*>>
      groups;
  for (const gflags::CommandLineFlagInfo& f : flags) {
    std::string title = FlagGroup(f.filename, f.name);
    if (title.empty()) continue;
    groups[{GroupRank(title), title}].push_back(&f);
  }
  std::string out = absl::StrCat(options.name, ": ", options.usage, "\n");
  for (const auto& [key, members] : groups) {
    absl::StrAppend(&out, "\n", key.second, ":\n");
    for (const gflags::CommandLineFlagInfo* f : members) {
      absl::StrAppend(&out, FlagLine(*f));
      AppendWrapped(f->description, &out);
    }
  }
  absl::StrAppend(&out,
                  "\n--helpfull lists every flag, glog's and gflags' own "
                  "included; --version prints the version and build.\n");
  return out;
}

int ParseCommandLine(const CliOptions& options, int* argc, char*** argv) {
  gflags::SetUsageMessage(options.usage);
  if (absl::Status s = CheckCommandLineFlags(*argc, *argv); !s.ok()) {
    return UsageError(options, s.message());
  }
  const std::string argv0 = (*argv)[0];
  gflags::ParseCommandLineNonHelpFlags(argc, argv, /*remove_flags=*/true);
  if (BoolFlag("help")) {
    std::fputs(HelpText(options).c_str(), stdout);
    return 0;
  }
  if (BoolFlag("helpfull")) {
    gflags::ShowUsageWithFlags(argv0.c_str());
    return 0;
  }
  if (BoolFlag("version")) {
    std::printf("%s\n", VersionLine(options.name).c_str());
    return 0;
  }
  gflags::HandleCommandLineHelpFlags();  // --helpshort, --helpmatch, ...
  if (!options.positional_arguments && *argc > 1) {
    return UsageError(options,
                      absl::StrCat("unexpected argument '", (*argv)[1], "'"));
  }
#ifdef NDEBUG
  // Debian's Abseil is built without NDEBUG, so every absl::Mutex lock
  // also updated a global lock-order graph (deadlock detection), which
  // cost ~150 ns per lock and unlock on the request path. A release
  // build of Petrel turns it off, as a release Abseil has it; debug
  // builds and the tests keep it.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
#endif
  // glog keeps the pointer: argv[0] lives as long as the process.
  return SetUpLogging(options, (*argv)[0]);
}

}  // namespace petrel
