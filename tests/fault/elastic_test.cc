// Elastic servers (docs/failures.md, "Elastic servers"), with the real
// daemons on 127.0.0.1: petrel-worker check jobs push to 3 servers with
// --replicas=2 and 8 requests in flight; a fourth petrel-server started
// with --add_server joins the running job, copies its fair share of the key
// ranges from their primaries while the workers push, and the scheduler
// publishes the map in which it holds them (and leads some): the workers'
// requests under the old map that reach an old primary after the switch
// are handed off to the new one. The check jobs' exact sums prove that no
// push was lost or applied twice.
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

#include "tests/fault/fault_waits.h"
#include "tests/harness/daemon_cluster.h"

namespace petrel {
namespace {

constexpr absl::Duration kJobTimeout = absl::Seconds(120);

TEST(ElasticTest, AddedServerTakesItsShareWhileWorkersPush) {
  DaemonCluster cluster(ReplicatedJobOptions(3, 2, 60));
  ASSERT_TRUE(cluster.StartScheduler().ok()) << cluster.Output();
  std::vector<Announce> ready;
  std::vector<Subprocess*> servers;
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<Subprocess*> s = cluster.StartNode("petrel-server");
    ASSERT_TRUE(s.ok()) << s.status();
    servers.push_back(*s);
  }
  std::vector<Subprocess*> workers;
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<Subprocess*> w = cluster.StartNode(
        "petrel-worker",
        {"--rounds=40000", "--num_keys=300", "--inflight=8", "--timeout_s=60"});
    ASSERT_TRUE(w.ok()) << w.status();
    workers.push_back(*w);
  }
  for (Subprocess* s : servers) {
    absl::StatusOr<Announce> a = cluster.WaitReady(s);
    ASSERT_TRUE(a.ok()) << a.status() << cluster.Output();
    ready.push_back(*a);
  }
  for (Subprocess* w : workers) {
    ASSERT_TRUE(cluster.WaitReady(w).ok()) << cluster.Output();
  }
  Subprocess* sched = cluster.scheduler();
  WaitForPushes(ready[0], 2000);
  if (HasFatalFailure()) return;
  absl::StatusOr<Subprocess*> added =
      cluster.StartNode("petrel-server", {"--add_server"});
  ASSERT_TRUE(added.ok()) << added.status();
  ASSERT_TRUE(WaitForOutput(sched, "was added after")) << cluster.Output();
  // Its own line may still be on its way through the pipe.
  EXPECT_TRUE(WaitForOutput(*added, "added server 3 caught up"))
      << (*added)->Output();
  absl::StatusOr<Announce> a = cluster.WaitReady(*added);
  ASSERT_TRUE(a.ok()) << a.status() << cluster.Output();
  // It serves its share: the workers' pushes reach it while they go on.
  WaitForPushes(*a, 2000);
  if (HasFatalFailure()) return;
  absl::Status running =
      cluster.StillRunning(workers, "the new map was used", "--rounds");
  EXPECT_TRUE(running.ok()) << running;
  absl::StatusOr<std::string> metrics = cluster.SchedulerMetrics();
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  EXPECT_TRUE(
      absl::StrContains(*metrics, "petrel_scheduler_servers_added_total 1"))
      << *metrics;
  for (Subprocess* w : workers) {
    absl::StatusOr<int> code = w->Wait(kJobTimeout);
    ASSERT_TRUE(code.ok()) << cluster.Output();
    EXPECT_EQ(*code, 0) << cluster.Output();
    EXPECT_TRUE(absl::StrContains(w->Output(), "ok=true")) << w->Output();
  }
  absl::StatusOr<int> code = sched->Wait(kJobTimeout);
  ASSERT_TRUE(code.ok()) << cluster.Output();
  EXPECT_EQ(*code, 0) << cluster.Output();
  code = (*added)->Wait(kJobTimeout);
  ASSERT_TRUE(code.ok()) << cluster.Output();
  EXPECT_EQ(*code, 0) << (*added)->Output();
  // The time to add, for docs/failures.md.
  for (const std::string& out : {(*added)->Output(), sched->Output()}) {
    for (absl::string_view line : absl::StrSplit(out, '\n')) {
      if (absl::StrContains(line, "caught up") ||
          absl::StrContains(line, "was added") ||
          absl::StrContains(line, "is added as")) {
        std::cout << line << "\n";
      }
    }
  }
}

}  // namespace
}  // namespace petrel
