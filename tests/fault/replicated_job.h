// ReplicatedJob: a check job on the real daemons with replicated servers
// (docs/failures.md, "Replicated servers"), for the fault tests: 3 servers
// keeping `replicas` copies of each key range, two petrel-worker check jobs
// pushing with 8 requests in flight. Header-only, for tests.
#ifndef PETREL_TESTS_FAULT_REPLICATED_JOB_H_
#define PETREL_TESTS_FAULT_REPLICATED_JOB_H_

#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

#include "tests/fault/fault_waits.h"
#include "tests/harness/daemon_cluster.h"

namespace petrel {

constexpr absl::Duration kJobTimeout = absl::Seconds(90);

struct ReplicatedJob {
  // `config`: a job config file that sets the replicas instead of
  // --replicas (empty: the flag).
  ReplicatedJob(int servers, int replicas, int heartbeat_timeout_s,
                const std::string& config = "")
      : num_servers(servers), cluster([&] {
          DaemonCluster::Options o =
              ReplicatedJobOptions(servers, replicas, heartbeat_timeout_s);
          // The config replaces --replicas, the first scheduler flag.
          if (!config.empty()) o.scheduler_flags[0] = "--config=" + config;
          return o;
        }()) {}

  // Starts the job: `rounds` pushes of every key by each worker.
  void Start(int rounds) {
    ASSERT_TRUE(cluster.StartScheduler().ok()) << cluster.Output();
    for (int i = 0; i < num_servers; ++i) {
      absl::StatusOr<Subprocess*> s = cluster.StartNode("petrel-server");
      ASSERT_TRUE(s.ok()) << s.status();
      servers.push_back(*s);
    }
    for (int i = 0; i < 2; ++i) {
      absl::StatusOr<Subprocess*> w = cluster.StartNode(
          "petrel-worker", {absl::StrCat("--rounds=", rounds), "--num_keys=300",
                            "--inflight=8", "--timeout_s=30"});
      ASSERT_TRUE(w.ok()) << w.status();
      workers.push_back(*w);
    }
    for (Subprocess* s : servers) {
      absl::StatusOr<Announce> a = cluster.WaitReady(s);
      ASSERT_TRUE(a.ok()) << a.status() << cluster.Output();
      server_ready.push_back(*a);
    }
    for (Subprocess* w : workers) {
      ASSERT_TRUE(cluster.WaitReady(w).ok()) << cluster.Output();
    }
  }

  // Waits until server `i` answered at least `n` pushes (from its
  // /metrics), so that a fault hits a job in full flow.
  void WaitForPushes(int i, double n) {
    const absl::Time deadline = absl::Now() + absl::Seconds(30);
    while (absl::Now() < deadline) {
      absl::StatusOr<std::string> text =
          HttpGet(server_ready[i].metrics_port, "/metrics");
      if (text.ok()) {
        std::map<std::string, double> count =
            SumMetric(*text, "petrel_server_request_seconds_count", "op");
        if (count["push"] >= n) return;
      }
      absl::SleepFor(absl::Milliseconds(20));  // polling, with a deadline
    }
    FAIL() << "server " << i << " did not answer " << n << " pushes\n"
           << cluster.Output();
  }

  // Every worker's check passed, and the scheduler ended the job cleanly.
  void ExpectExactSums() {
    for (Subprocess* w : workers) {
      absl::StatusOr<int> code = w->Wait(kJobTimeout);
      ASSERT_TRUE(code.ok()) << cluster.Output();
      EXPECT_EQ(*code, 0) << cluster.Output();
      EXPECT_TRUE(absl::StrContains(w->Output(), "ok=true")) << w->Output();
    }
    absl::StatusOr<int> code = cluster.scheduler()->Wait(kJobTimeout);
    ASSERT_TRUE(code.ok()) << cluster.Output();
    EXPECT_EQ(*code, 0) << cluster.Output();
  }

  int num_servers;
  DaemonCluster cluster;
  std::vector<Subprocess*> servers;
  std::vector<Announce> server_ready;
  std::vector<Subprocess*> workers;
};

}  // namespace petrel

#endif  // PETREL_TESTS_FAULT_REPLICATED_JOB_H_
