// A failover after an add (docs/failures.md, "Elastic servers"), with the
// real daemons on 127.0.0.1: petrel-worker check jobs push to 3 servers with
// --replicas=2 and 8 requests in flight; a fourth petrel-server joins with
// --add_server and is published leading its share; then a server is killed
// (kill -9) while they push. When the ADDED server dies, its ranges (chains
// [3, old primary]) go to their old primaries, not to its ring successor
// (rank 0, which may back none of them): each unanswered push it had is cut
// by the new map and resent, piece by piece, to each range's new primary.
// The check jobs' exact sums prove that no acknowledged push was lost or
// applied twice.
#include <string>
#include <vector>

#include <signal.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

#include "tests/fault/replicated_job.h"
#include "tests/harness/daemon_cluster.h"

namespace petrel {
namespace {

// Adds a 4th server to a running 3-server R = 2 job, waits until it answers
// pushes, then kills server `victim` (3: the added one) and expects exact
// sums.
void AddThenKill(int victim) {
  ReplicatedJob job(3, 2, 60);
  job.Start(/*rounds=*/40000);
  if (::testing::Test::HasFatalFailure()) return;
  job.WaitForPushes(0, 2000);
  if (::testing::Test::HasFatalFailure()) return;
  absl::StatusOr<Subprocess*> added =
      job.cluster.StartNode("petrel-server", {"--add_server"});
  ASSERT_TRUE(added.ok()) << added.status();
  Subprocess* sched = job.cluster.scheduler();
  ASSERT_TRUE(WaitForOutput(sched, "was added after")) << job.cluster.Output();
  absl::StatusOr<Announce> a = job.cluster.WaitReady(*added);
  ASSERT_TRUE(a.ok()) << a.status() << job.cluster.Output();
  job.servers.push_back(*added);
  job.server_ready.push_back(*a);
  // The new map in use: the added server answers pushes of its own ranges.
  job.WaitForPushes(3, 1000);
  if (::testing::Test::HasFatalFailure()) return;
  absl::Status running =
      job.cluster.StillRunning(job.workers, "the kill", "--rounds");
  ASSERT_TRUE(running.ok()) << running;
  job.servers[victim]->Signal(SIGKILL);
  job.ExpectExactSums();
  EXPECT_TRUE(WaitForOutput(sched, "fail over to", absl::Seconds(1)))
      << job.cluster.Output();
  // The workers' requests in flight to it were cut by the new map.
  bool cut = false;
  for (Subprocess* w : job.workers) {
    cut = cut || absl::StrContains(w->Output(), "pieces cut by the map");
  }
  EXPECT_TRUE(cut) << job.cluster.Output();
  if (victim != 3) {
    absl::StatusOr<int> code = (*added)->Wait(kJobTimeout);
    ASSERT_TRUE(code.ok()) << job.cluster.Output();
    EXPECT_EQ(*code, 0) << (*added)->Output();
  }
}

TEST(ElasticFailoverTest, KilledAddedServerLosesNoAcknowledgedPush) {
  AddThenKill(3);
}

TEST(ElasticFailoverTest, KilledOriginalServerAfterAnAddLosesNoPush) {
  AddThenKill(1);
}

}  // namespace
}  // namespace petrel
