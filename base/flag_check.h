// Command-line helpers for the binaries' flag modules (main and *_flags.cc).
// CheckCommandLineFlags finds the command-line mistakes that would make
// gflags::ParseCommandLineFlags print an error and exit(1) (an unknown flag,
// a value that does not parse, a missing value), so that a binary can report
// them as a Status and exit 2, the project's code for bad flags; base/cli.h
// is the whole command-line handling built on it. Library code does not use
// this file: it reads no flags.

#ifndef PETREL_BASE_FLAG_CHECK_H_
#define PETREL_BASE_FLAG_CHECK_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

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

// OK when `min <= value <= max`; otherwise InvalidArgument
// "--FLAG: VALUE is not in MIN..MAX" (main exits 2). The one wording of a
// flag's range check in every binary.
absl::Status CheckFlagRange(absl::string_view flag, int64_t value, int64_t min,
                            int64_t max);

}  // namespace petrel

#endif  // PETREL_BASE_FLAG_CHECK_H_
