// What the fault tests share (header-only, for tests): the options of a
// replicated check job on the real daemons, and the waits that poll a
// daemon's output or /metrics with a deadline.
#ifndef PETREL_TESTS_FAULT_FAULT_WAITS_H_
#define PETREL_TESTS_FAULT_FAULT_WAITS_H_

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

#include "tests/harness/daemon_cluster.h"

namespace petrel {

// `servers` servers and two workers, heartbeats every 200 ms, /metrics on
// a free port; the scheduler keeps `replicas` copies of each key range and
// declares a silent node dead after `heartbeat_timeout_s`.
inline DaemonCluster::Options ReplicatedJobOptions(int servers, int replicas,
                                                   int heartbeat_timeout_s) {
  DaemonCluster::Options o;
  o.bin_dir = PETREL_BIN_DIR;
  o.num_servers = servers;
  o.num_workers = 2;
  o.flags = {"--join_timeout_s=30", "--heartbeat_interval_ms=200",
             "--metrics_port=0"};
  o.scheduler_flags = {
      absl::StrCat("--replicas=", replicas),
      absl::StrCat("--heartbeat_timeout_s=", heartbeat_timeout_s)};
  return o;
}

// Waits until `proc`'s output holds `text` (polling, with a deadline).
inline bool WaitForOutput(Subprocess* proc, const std::string& text,
                          absl::Duration timeout = absl::Seconds(60)) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    if (absl::StrContains(proc->Output(), text)) return true;
    absl::SleepFor(absl::Milliseconds(20));  // polling, with a deadline
  }
  return false;
}

// Waits until `server` answered at least `n` pushes (from its /metrics), so
// that a fault hits a job in full flow; a test failure after 30 s.
inline void WaitForPushes(const Announce& server, double n) {
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (absl::Now() < deadline) {
    absl::StatusOr<std::string> text = HttpGet(server.metrics_port, "/metrics");
    if (text.ok() && SumMetric(*text, "petrel_server_request_seconds_count",
                               "op")["push"] >= n) {
      return;
    }
    absl::SleepFor(absl::Milliseconds(20));  // polling, with a deadline
  }
  FAIL() << "server " << server.rank << " did not answer " << n << " pushes";
}

}  // namespace petrel

#endif  // PETREL_TESTS_FAULT_FAULT_WAITS_H_
