#include "tests/harness/netns_lab.h"

#include <algorithm>
#include <atomic>
#include <cerrno>

#include <signal.h>
#include <unistd.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

#include "base/status_macros.h"

namespace petrel {
namespace {

constexpr absl::Duration kIpTimeout = absl::Seconds(20);
// No interface has it (locally administered, and the lab's veths get
// random ones): frames sent to it are dropped by every host.
constexpr char kNowhere[] = "02:00:00:00:00:01";

std::string IpPath() {
  for (const char* p : {"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"}) {
    if (access(p, X_OK) == 0) return p;
  }
  return "";
}

// Deletes the namespaces of labs whose test process has gone.
void DeleteStaleNamespaces(const std::string& ip) {
  ProgramRun list = RunToEnd({ip, "netns", "list"}, kIpTimeout);
  if (list.code != 0) return;
  for (absl::string_view line : absl::StrSplit(list.out, '\n')) {
    absl::string_view name = line.substr(0, line.find(' '));
    if (!absl::ConsumePrefix(&name, "petrel-")) continue;
    int pid;
    if (!absl::SimpleAtoi(name.substr(0, name.find('-')), &pid)) continue;
    if (kill(pid, 0) == 0 || errno != ESRCH) continue;
    RunToEnd({ip, "netns", "delete", absl::StrCat("petrel-", name)},
             kIpTimeout);
  }
}

}  // namespace

absl::Status NetnsLab::Ip(std::vector<std::string> args) {
  args.insert(args.begin(), IpPath());
  ProgramRun run = RunToEnd(args, kIpTimeout);
  if (run.code != 0) {
    return absl::InternalError(absl::StrCat(
        "'", absl::StrJoin(args, " "), "' exited ", run.code, ": ", run.out));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<NetnsLab>> NetnsLab::Create(int hosts) {
  if (hosts < 1 || hosts > 200) {
    return absl::InvalidArgumentError(
        absl::StrCat("hosts must be 1..200, got ", hosts));
  }
  if (geteuid() != 0) {
    return absl::UnavailableError(
        "network namespaces need root (CAP_NET_ADMIN); run the test as root");
  }
  const std::string ip = IpPath();
  if (ip.empty()) {
    return absl::UnavailableError(
        "no `ip` command (Debian package iproute2) in /usr/sbin or /sbin");
  }
  DeleteStaleNamespaces(ip);
  static std::atomic<int> next{0};
  std::unique_ptr<NetnsLab> lab(
      new NetnsLab(absl::StrCat("petrel-", getpid(), "-", next.fetch_add(1))));
  absl::Status s = lab->Build(hosts);
  if (!s.ok()) {
    return absl::UnavailableError(
        absl::StrCat("could not make the network namespaces: ", s.message()));
  }
  return lab;
}

absl::Status NetnsLab::Build(int hosts) {
  hub_ = prefix_ + "-hub";
  PETREL_RETURN_IF_ERROR(Ip({"netns", "add", hub_}));
  made_.push_back(hub_);
  PETREL_RETURN_IF_ERROR(
      Ip({"-n", hub_, "link", "add", "br0", "type", "bridge"}));
  PETREL_RETURN_IF_ERROR(Ip({"-n", hub_, "link", "set", "br0", "up"}));
  for (int h = 0; h < hosts; ++h) {
    const std::string ns = absl::StrCat(prefix_, "-h", h);
    const std::string port = absl::StrCat("p", h);
    PETREL_RETURN_IF_ERROR(Ip({"netns", "add", ns}));
    made_.push_back(ns);
    names_.push_back(ns);
    // Made in the hub with its peer moved into the host at once: no name
    // is ever taken in the test's own namespace.
    PETREL_RETURN_IF_ERROR(Ip({"-n", hub_, "link", "add", port, "type", "veth",
                               "peer", "name", "eth0", "netns", ns}));
    PETREL_RETURN_IF_ERROR(
        Ip({"-n", hub_, "link", "set", port, "master", "br0", "up"}));
    PETREL_RETURN_IF_ERROR(Ip({"-n", ns, "link", "set", "lo", "up"}));
    PETREL_RETURN_IF_ERROR(
        Ip({"-n", ns, "addr", "add", absl::StrCat(address(h), "/24"), "dev",
            "eth0"}));
    PETREL_RETURN_IF_ERROR(Ip({"-n", ns, "link", "set", "eth0", "up"}));
    ProgramRun link = RunToEnd(
        {IpPath(), "-n", ns, "-o", "link", "show", "eth0"}, kIpTimeout);
    const size_t at = link.out.find("link/ether ");
    if (link.code != 0 || at == std::string::npos) {
      return absl::InternalError(
          absl::StrCat("no MAC address for eth0 in ", ns, ": ", link.out));
    }
    macs_.push_back(link.out.substr(at + 11, 17));
  }
  return absl::OkStatus();
}

NetnsLab::~NetnsLab() {
  for (auto it = made_.rbegin(); it != made_.rend(); ++it) {
    Ip({"netns", "delete", *it}).IgnoreError();
  }
}

std::string NetnsLab::address(int h) const {
  return absl::StrCat("10.213.0.", h + 1);
}

Placement NetnsLab::placement(int h) const {
  Placement p;
  p.prefix = {IpPath(), "netns", "exec", names_[h]};
  p.host = address(h);
  return p;
}

absl::Status NetnsLab::SetNeighbour(int on, int of, bool cut) {
  return Ip({"-n", names_[on], "neigh", "replace", address(of), "lladdr",
             cut ? kNowhere : macs_[of], "nud", cut ? "permanent" : "reachable",
             "dev", "eth0"});
}

absl::Status NetnsLab::Cut(int a, int b) {
  if (a == b || a < 0 || b < 0 || a >= hosts() || b >= hosts()) {
    return absl::InvalidArgumentError(
        absl::StrCat("no cut between hosts ", a, " and ", b));
  }
  PETREL_RETURN_IF_ERROR(SetNeighbour(a, b, true));
  PETREL_RETURN_IF_ERROR(SetNeighbour(b, a, true));
  cuts_.insert({std::min(a, b), std::max(a, b)});
  return absl::OkStatus();
}

absl::Status NetnsLab::Isolate(int h) {
  for (int other = 0; other < hosts(); ++other) {
    if (other != h) PETREL_RETURN_IF_ERROR(Cut(h, other));
  }
  return absl::OkStatus();
}

absl::Status NetnsLab::Heal() {
  // The true MACs, as reachable entries: traffic resumes at once, and the
  // kernel's neighbour discovery takes the entries over from there.
  for (const auto& [a, b] : cuts_) {
    PETREL_RETURN_IF_ERROR(SetNeighbour(a, b, false));
    PETREL_RETURN_IF_ERROR(SetNeighbour(b, a, false));
  }
  cuts_.clear();
  return absl::OkStatus();
}

}  // namespace petrel
