#include "tools/launch/remote_command.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"

namespace petrel {

std::string ShellQuote(absl::string_view s) {
  return absl::StrCat("'", absl::StrReplaceAll(s, {{"'", "'\\''"}}), "'");
}

std::vector<std::string> SshArgv(
    const SshOptions& options, const std::string& target,
    const std::vector<std::string>& argv,
    const std::vector<std::pair<std::string, std::string>>& env) {
  std::vector<std::string> command = {"env"};
  for (const auto& [key, value] : env) {
    command.push_back(ShellQuote(absl::StrCat(key, "=", value)));
  }
  for (const std::string& arg : argv) command.push_back(ShellQuote(arg));
  const int64_t grace_s = std::max<int64_t>(
      1,
      absl::ToInt64Seconds(absl::Ceil(options.grace_period, absl::Seconds(1))));
  std::string script;
  if (!options.working_dir.empty()) {
    const std::string dir = ShellQuote(options.working_dir);
    absl::StrAppend(&script, "cd ", dir, " 2>/dev/null || echo ",
                    ShellQuote("petrel-launch: no directory "), dir,
                    ShellQuote(" here; running in the login directory"),
                    " >&2; ");
  }
  // Background jobs of a non-interactive shell read /dev/null unless told
  // otherwise, hence fd 3 for the watcher's copy of ssh's stdin.
  absl::StrAppend(
      &script, "exec 3<&0; ", absl::StrJoin(command, " "),
      " </dev/null & p=$!; (cat <&3 >/dev/null 2>&1; kill -TERM $p; sleep ",
      grace_s, "; kill -KILL $p) >/dev/null 2>&1 & w=$!; exec 3<&-; ",
      "wait $p; rc=$?; kill $w 2>/dev/null; exit $rc");
  std::vector<std::string> ssh = {options.program, "-T", "-o", "BatchMode=yes"};
  if (options.port != 0) {
    ssh.push_back("-p");
    ssh.push_back(absl::StrCat(options.port));
  }
  ssh.insert(ssh.end(), options.extra_args.begin(), options.extra_args.end());
  ssh.push_back("--");
  ssh.push_back(target);
  ssh.push_back("exec /bin/sh -c " + ShellQuote(script));
  return ssh;
}

}  // namespace petrel
