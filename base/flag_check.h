// Command-line helpers for the binaries' flag modules (main and *_flags.cc).
// CheckCommandLineFlags finds the command-line mistakes that would make
// gflags::ParseCommandLineFlags print an error and exit(1) (an unknown flag,
// a value that does not parse, a missing value), so that a binary can report
// them as a Status and exit 2, the project's code for bad flags. Library
// code does not use this file: it reads no flags.

#ifndef PETREL_BASE_FLAG_CHECK_H_
#define PETREL_BASE_FLAG_CHECK_H_

#include "absl/status/status.h"

namespace petrel {

// Walks argv the way gflags does ("--name=value", "--name value",
// "--[no]boolflag", "-name", "--" ends the flags) and returns InvalidArgument
// for the first bad flag. As a side effect it sets each flag it checks to its
// command-line value; ParseCommandLineFlags sets the same values again.
// REQUIRES: called from main before ParseCommandLineFlags, with no other
// thread reading flags.
absl::Status CheckCommandLineFlags(int argc, const char* const* argv);

// True when flag `name` was given on the command line (or set since), so a
// layered setting lets it win over a config file or an environment value.
bool FlagIsSet(const char* name);

// The whole command-line handling of a tool's main (petrel-predict,
// petrel-export): CheckCommandLineFlags, gflags parsing (flags removed from
// argv), --help (the usage message and the flags defined in files whose path
// contains `help_filter`, e.g. "predict_main"), gflags' other help flags
// (--helpfull, --version), and no positional argument. Returns -1 when main
// goes on, else the exit code main returns: 0 after help, 2 after one line
// "PROGRAM: what is wrong (see --help)" on stderr.
// REQUIRES: as CheckCommandLineFlags; gflags::SetUsageMessage was called.
int ParseToolCommandLine(int* argc, char*** argv, const char* help_filter);

}  // namespace petrel

#endif  // PETREL_BASE_FLAG_CHECK_H_
