// A replacement server joins a running replicated job (docs/failures.md,
// "Replacement servers"), with the real daemons on 127.0.0.1: petrel-worker
// check jobs push to 3 servers with --replicas=2; one server is killed, its
// ranges fail over, a new petrel-server started with the scheduler's
// address takes its place and copies its ranges while the workers push;
// once the scheduler says it is a replica again, another server is killed,
// whose ranges then rely on the replacement's copy. The check jobs' exact
// sums prove that the copy holds every acknowledged push exactly once.
#include <iostream>
#include <string>
#include <vector>

#include <signal.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

#include "tests/fault/fault_waits.h"
#include "tests/fault/replicated_job.h"
#include "tests/harness/daemon_cluster.h"

namespace petrel {
namespace {

// How many times `text` occurs in `s`.
int Count(const std::string& s, const std::string& text) {
  int n = 0;
  for (size_t at = s.find(text); at != std::string::npos;
       at = s.find(text, at + 1)) {
    ++n;
  }
  return n;
}

TEST(ReplacementTest, ReplacementCopiesRangesAndCarriesTheNextFailover) {
  DaemonCluster cluster(ReplicatedJobOptions(3, 2, 60));
  ASSERT_TRUE(cluster.StartScheduler().ok()) << cluster.Output();
  std::vector<Subprocess*> servers;
  std::vector<Announce> ready;
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<Subprocess*> s = cluster.StartNode("petrel-server");
    ASSERT_TRUE(s.ok()) << s.status();
    servers.push_back(*s);
  }
  std::vector<Subprocess*> workers;
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<Subprocess*> w = cluster.StartNode(
        "petrel-worker",
        {"--rounds=60000", "--num_keys=300", "--inflight=8", "--timeout_s=60"});
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
  // Pushes in full flow, then the first kill.
  WaitForPushes(ready[0], 2000);
  if (HasFatalFailure()) return;
  servers[0]->Signal(SIGKILL);
  ASSERT_TRUE(WaitForOutput(sched, "fail over to")) << cluster.Output();
  // The replacement: a plain petrel-server with the scheduler's address.
  absl::StatusOr<Subprocess*> fresh = cluster.StartNode("petrel-server");
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  ASSERT_TRUE(WaitForOutput(sched, "is a replica again")) << cluster.Output();
  // Its own line may still be on its way through the pipe.
  EXPECT_TRUE(WaitForOutput(*fresh, "caught up")) << (*fresh)->Output();
  EXPECT_TRUE(absl::StrContains(sched->Output(), "; 0 of ")) << sched->Output();
  absl::StatusOr<std::string> metrics = cluster.SchedulerMetrics();
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  EXPECT_TRUE(
      absl::StrContains(*metrics, "petrel_scheduler_under_replicated_ranges 0"))
      << *metrics;
  // Workers still pushing: the second kill leaves some ranges only on the
  // replacement.
  absl::Status running =
      cluster.StillRunning(workers, "the second kill", "--rounds");
  ASSERT_TRUE(running.ok()) << running;
  WaitForPushes(ready[1], 4000);
  if (HasFatalFailure()) return;
  servers[1]->Signal(SIGKILL);
  for (Subprocess* w : workers) {
    absl::StatusOr<int> code = w->Wait(kJobTimeout);
    ASSERT_TRUE(code.ok()) << cluster.Output();
    EXPECT_EQ(*code, 0) << cluster.Output();
    EXPECT_TRUE(absl::StrContains(w->Output(), "ok=true")) << w->Output();
  }
  absl::StatusOr<int> code = sched->Wait(kJobTimeout);
  ASSERT_TRUE(code.ok()) << cluster.Output();
  EXPECT_EQ(*code, 0) << cluster.Output();
  EXPECT_EQ(Count(sched->Output(), "fail over to"), 2) << sched->Output();
  // The catch-up time, for docs/failures.md.
  for (const std::string& out : {(*fresh)->Output(), sched->Output()}) {
    for (absl::string_view line : absl::StrSplit(out, '\n')) {
      if (absl::StrContains(line, "caught up")) std::cout << line << "\n";
    }
  }
}

// A replacement killed while it copies: its sources are stopped (SIGSTOP)
// before it starts, so its copy requests are pending when it dies. The job
// goes on with the map it had, the rank waits, and a second replacement
// takes it and catches up; the check jobs end with exact sums.
TEST(ReplacementTest, AReplacementDyingWhileItCopiesLeavesTheJobRunning) {
  ReplicatedJob job(3, 2, 60);
  job.Start(40000);
  if (HasFatalFailure()) return;
  DaemonCluster& cluster = job.cluster;
  Subprocess* sched = cluster.scheduler();
  job.WaitForPushes(0, 2000);
  if (HasFatalFailure()) return;
  job.servers[0]->Signal(SIGKILL);
  ASSERT_TRUE(WaitForOutput(sched, "fail over to")) << cluster.Output();
  // Both live servers are the sources of the dead server's ranges: while
  // they are stopped, the replacement's copies cannot finish.
  job.servers[1]->Signal(SIGSTOP);
  job.servers[2]->Signal(SIGSTOP);
  absl::StatusOr<Subprocess*> first = cluster.StartNode("petrel-server");
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(WaitForOutput(
      sched, absl::StrCat("replaces server ", job.server_ready[0].rank)))
      << cluster.Output();
  (*first)->Signal(SIGKILL);
  ASSERT_TRUE(WaitForOutput(sched, "a replacement that died while copying"))
      << cluster.Output();
  job.servers[1]->Signal(SIGCONT);
  job.servers[2]->Signal(SIGCONT);
  absl::Status running =
      cluster.StillRunning(job.workers, "the replacement's death", "--rounds");
  ASSERT_TRUE(running.ok()) << running << cluster.Output();
  absl::StatusOr<Subprocess*> second = cluster.StartNode("petrel-server");
  ASSERT_TRUE(second.ok()) << second.status();
  ASSERT_TRUE(WaitForOutput(sched, "is a replica again")) << cluster.Output();
  job.ExpectExactSums();
  EXPECT_EQ(Count(sched->Output(), "fail over to"), 1) << sched->Output();
}

}  // namespace
}  // namespace petrel
