// The command line of every Petrel binary, handled in one place: each
// main() describes itself (CliOptions) and calls ParseCommandLine first.
//
//   --help      the program's own flags, grouped by what they configure
//               (FlagGroup), each with its default and meaning; glog's and
//               gflags' internals are left out. Exit 0.
//   --helpfull  every flag, glog's and gflags' included (gflags' listing).
//               Exit 0.
//   --version   one line: version, git commit, build type, CUDA on or off
//               (base/build_info.h). Exit 0.
//   --log_dir   glog writes its log files there (PROGRAM.INFO etc., errors
//               also on stderr); without it everything is logged to stderr.
//               A --log_dir that is not a writable directory is a usage
//               error.
// An unknown flag, a value that does not parse, a missing value or a stray
// argument is one line "PROGRAM: what is wrong (see --help)" and exit 2.
//
// Part of the flags module of binaries (it reads glog's and gflags' own
// flags): linked into executables only, never into a library.
//
// Thread safety: ParseCommandLine runs on the main thread before any other
// thread starts.
#ifndef PETREL_BASE_CLI_H_
#define PETREL_BASE_CLI_H_

#include <string>

#include "absl/strings/string_view.h"

namespace petrel {

struct CliOptions {
  // The program's name as users type it ("petrel-server"): it starts every
  // error line and the --version line. Required.
  std::string name;
  // What --help prints above the flags: what the program does and how it is
  // called. Default empty.
  std::string usage;
  // Positional arguments are the program's to read (they stay in argv);
  // otherwise the first one is a usage error. Default false.
  bool positional_arguments = false;
};

// Parses the command line as described above, removing the flags from argv,
// and initialises glog (logging to stderr unless --log_dir is given).
// Returns -1 when main goes on, else the exit code main returns.
// REQUIRES: called once, before any thread starts.
int ParseCommandLine(const CliOptions& options, int* argc, char*** argv);

// What --help prints for `options`: the usage, then the flags of every
// group that has any, then a note on --helpfull and --version.
std::string HelpText(const CliOptions& options);

// The --help group of a flag defined in source file `file` (as gflags
// records it, e.g. "../node/node_flags.cc"): a title such as "Cluster
// (every node)"; "Logging" for glog's --log_dir, --v and --vmodule (pass
// their `name`); "" for the other flags of glog and gflags, which only
// --helpfull shows. A file Petrel does not know (a user's program) is
// "Program".
std::string FlagGroup(absl::string_view file, absl::string_view name);

}  // namespace petrel

#endif  // PETREL_BASE_CLI_H_
