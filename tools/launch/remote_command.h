// RemoteCommand: the ssh command line that runs one process of a job on
// another host for `petrel-launch --hosts`, so that the process dies when
// the launcher is done with it.
//
// ssh runs a small /bin/sh wrapper on the host: it starts the process with
// the given environment (in the launcher's working directory when the host
// has it) and watches its stdin, which ssh connects to a pipe the launcher
// holds. When that pipe closes (the launcher closes it to stop the process,
// or the launcher or ssh dies) the wrapper sends SIGTERM, then SIGKILL
// after the grace period. The wrapper exits with the process's exit code,
// which ssh passes on (255 is ssh's own failure).
//
// Thread-safe (pure functions).
#ifndef PETREL_TOOLS_LAUNCH_REMOTE_COMMAND_H_
#define PETREL_TOOLS_LAUNCH_REMOTE_COMMAND_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace petrel {

struct SshOptions {
  // The ssh client. Default "ssh" (looked up on PATH).
  std::string program = "ssh";
  // Port to connect to; 0 (the default) leaves it to ssh (~/.ssh/config,
  // else 22).
  int port = 0;
  // More ssh arguments, e.g. {"-i", "key", "-o", "User=petrel"}. Default
  // none.
  std::vector<std::string> extra_args;
  // Directory the process starts in when the host has it (the launcher's
  // working directory). Default empty: the login directory.
  std::string working_dir;
  // Time between SIGTERM and SIGKILL once the pipe closes. Default 5 s.
  absl::Duration grace_period = absl::Seconds(5);
};

// `s` quoted for a POSIX shell ('...' with embedded quotes escaped).
std::string ShellQuote(absl::string_view s);

// The argv that runs `argv` with `env` set on `target` over ssh: ssh in
// batch mode (no password prompt), without a terminal, then the wrapper.
std::vector<std::string> SshArgv(
    const SshOptions& options, const std::string& target,
    const std::vector<std::string>& argv,
    const std::vector<std::pair<std::string, std::string>>& env);

}  // namespace petrel

#endif  // PETREL_TOOLS_LAUNCH_REMOTE_COMMAND_H_
