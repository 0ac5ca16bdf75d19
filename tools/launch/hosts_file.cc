#include "tools/launch/hosts_file.h"

#include <fstream>
#include <set>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace petrel {
namespace {

absl::Status ParseRoles(absl::string_view value, HostEntry& entry) {
  entry.scheduler = entry.server = entry.worker = false;
  for (absl::string_view role : absl::StrSplit(value, ',')) {
    if (role == "scheduler") {
      entry.scheduler = true;
    } else if (role == "server") {
      entry.server = true;
    } else if (role == "worker") {
      entry.worker = true;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown role '", role,
                       "' (roles= takes scheduler, server and worker)"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<HostEntry> ParseLine(absl::string_view line) {
  std::vector<absl::string_view> words =
      absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
  HostEntry entry;
  entry.target = std::string(words[0]);
  if (entry.target.find('=') != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("a line starts with the host, not '", words[0], "'"));
  }
  const size_t at = entry.target.rfind('@');
  entry.address =
      at == std::string::npos ? entry.target : entry.target.substr(at + 1);
  if (entry.address.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("no host name in '", words[0], "'"));
  }
  for (size_t i = 1; i < words.size(); ++i) {
    std::pair<absl::string_view, absl::string_view> kv =
        absl::StrSplit(words[i], absl::MaxSplits('=', 1));
    if (kv.first == "slots") {
      if (!absl::SimpleAtoi(kv.second, &entry.slots) || entry.slots < 1) {
        return absl::InvalidArgumentError(
            absl::StrCat("slots=", kv.second, " is not a whole number >= 1"));
      }
    } else if (kv.first == "roles") {
      if (absl::Status s = ParseRoles(kv.second, entry); !s.ok()) return s;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown setting '", words[i],
                       "' (a host line takes slots=N and roles=...)"));
    }
  }
  return entry;
}

// Round-robin over the hosts `may_run` allows, skipping full ones; `used`
// counts each host's slots taken.
absl::StatusOr<std::vector<size_t>> Spread(const std::vector<HostEntry>& hosts,
                                           int count, const char* role,
                                           bool HostEntry::*may_run,
                                           std::vector<int>& used) {
  std::vector<size_t> candidates;
  for (size_t i = 0; i < hosts.size(); ++i) {
    if (hosts[i].*may_run) candidates.push_back(i);
  }
  std::vector<size_t> out;
  if (count > 0 && candidates.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("no host in the hosts file may run a ", role));
  }
  size_t next = 0;
  for (int n = 0; n < count; ++n) {
    size_t tried = 0;
    while (tried < candidates.size()) {
      const size_t host = candidates[next % candidates.size()];
      ++next;
      ++tried;
      if (hosts[host].slots == 0 || used[host] < hosts[host].slots) {
        ++used[host];
        out.push_back(host);
        break;
      }
    }
    if (out.size() != static_cast<size_t>(n) + 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("the hosts file has no free slot for ", role, " ", n,
                       "; give hosts more slots= or more hosts"));
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<HostEntry>> ParseHostsFile(
    absl::string_view text, absl::string_view file_name) {
  std::vector<HostEntry> hosts;
  std::set<std::string> seen;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    line = line.substr(0, line.find('#'));
    if (absl::StripAsciiWhitespace(line).empty()) continue;
    absl::StatusOr<HostEntry> entry = ParseLine(line);
    if (entry.ok() && !seen.insert(entry->target).second) {
      entry = absl::InvalidArgumentError(
          absl::StrCat("host ", entry->target,
                       " is listed twice (use slots= for more processes)"));
    }
    if (!entry.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          file_name, ":", line_number, ": ", entry.status().message()));
    }
    hosts.push_back(*std::move(entry));
  }
  if (hosts.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(file_name, ": no host (one host per line)"));
  }
  return hosts;
}

absl::StatusOr<std::vector<HostEntry>> ReadHostsFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("cannot read hosts file ", path));
  }
  std::stringstream text;
  text << in.rdbuf();
  return ParseHostsFile(text.str(), path);
}

absl::StatusOr<Placement> PlaceProcesses(const std::vector<HostEntry>& hosts,
                                         int num_servers, int num_workers) {
  Placement placement;
  size_t s = 0;
  while (s < hosts.size() && !hosts[s].scheduler) ++s;
  if (s == hosts.size()) {
    return absl::InvalidArgumentError(
        "no host in the hosts file may run the scheduler");
  }
  placement.scheduler = s;
  std::vector<int> used(hosts.size(), 0);
  absl::StatusOr<std::vector<size_t>> servers =
      Spread(hosts, num_servers, "server", &HostEntry::server, used);
  if (!servers.ok()) return servers.status();
  placement.servers = *std::move(servers);
  absl::StatusOr<std::vector<size_t>> workers =
      Spread(hosts, num_workers, "worker", &HostEntry::worker, used);
  if (!workers.ok()) return workers.status();
  placement.workers = *std::move(workers);
  return placement;
}

}  // namespace petrel
