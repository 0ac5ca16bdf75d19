// NetnsLab: a small network of Linux network namespaces for partition
// tests. Each host is a namespace with one interface (eth0, 10.213.0.H+1/24)
// whose veth peer sits on a bridge in a hub namespace of its own, so the
// lab touches nothing in the test's namespace and two labs (two tests at
// once) do not see each other.
//
// A cut between two hosts drops every packet between them in both
// directions and tells neither side: each host's neighbour entry for the
// other is pinned to a MAC address no interface has, so frames still leave
// but no host accepts them. TCP connections stay up and retransmit, as
// across a failed switch, and resume when the cut heals. Other pairs are
// untouched: a server cut off from the scheduler still reaches the
// workers.
//
// Needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN) and iproute2's `ip`; Create
// says why when it cannot make the lab, for the test to skip visibly.
// Namespaces left by a killed test (named petrel-PID-...) are deleted by
// the next Create once that PID has gone.
//
// Thread safety: not thread-safe; use from the test thread.
#ifndef PETREL_TESTS_HARNESS_NETNS_LAB_H_
#define PETREL_TESTS_HARNESS_NETNS_LAB_H_

#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include "tests/harness/daemon_cluster.h"

namespace petrel {

class NetnsLab {
 public:
  // Makes `hosts` hosts (1 .. 200). Unavailable with the reason when this
  // machine cannot (not root, no `ip`, namespaces refused).
  static absl::StatusOr<std::unique_ptr<NetnsLab>> Create(int hosts);
  // Deletes the namespaces. Processes still running in one keep it alive
  // until they exit: destroy the processes first (declare the lab before
  // the DaemonCluster).
  ~NetnsLab();
  NetnsLab(const NetnsLab&) = delete;
  NetnsLab& operator=(const NetnsLab&) = delete;

  int hosts() const { return static_cast<int>(names_.size()); }
  // Host `h`'s address, e.g. "10.213.0.1" for host 0.
  std::string address(int h) const;
  // Where a DaemonCluster process runs on host `h`: prefixed with
  // `ip netns exec` (which execs the program: signals reach it) and bound
  // to the host's address.
  Placement placement(int h) const;

  // Drops every packet between hosts `a` and `b` until Heal.
  absl::Status Cut(int a, int b);
  // Cuts host `h` off from every other host.
  absl::Status Isolate(int h);
  // Removes every cut: the hosts reach each other again.
  absl::Status Heal();

 private:
  explicit NetnsLab(std::string prefix) : prefix_(std::move(prefix)) {}
  // Runs `ip` with `args`; Internal with its output when it fails.
  static absl::Status Ip(std::vector<std::string> args);
  absl::Status Build(int hosts);
  absl::Status SetNeighbour(int on, int of, bool cut);

  const std::string prefix_;  // petrel-PID-N
  std::string hub_;
  std::vector<std::string> names_;      // one namespace per host
  std::vector<std::string> macs_;       // each host's eth0 MAC
  std::set<std::pair<int, int>> cuts_;  // a < b
  std::vector<std::string> made_;       // namespaces to delete
};

}  // namespace petrel

#endif  // PETREL_TESTS_HARNESS_NETNS_LAB_H_
