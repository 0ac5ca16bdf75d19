// Replicated servers with the real daemons (docs/failures.md, "A server
// that comes back", "Repeated kills"):
// - a server stopped (SIGSTOP) long enough to be declared dead and then
//   continued (SIGCONT) is fenced: its ranges failed over, the other nodes
//   ignore what it still sends, the scheduler tells it that it is out of
//   the job and it exits 3 (kExitOutOfJob) with one line; the check jobs'
//   sums stay exact;
// - repeated kills within one run: 5 servers with 3 copies of each range,
//   two of them killed one after the other while the workers push; exact
//   sums.
#include <signal.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

#include "base/out_of_job.h"
#include "tests/fault/fault_waits.h"
#include "tests/fault/replicated_job.h"
#include "tests/harness/daemon_cluster.h"

namespace petrel {
namespace {

TEST(FencingTest, ServerContinuedAfterBeingDeclaredDeadIsFencedAndStops) {
  // A 5 s heartbeat timeout: a loaded machine that stalls every process
  // for 2-3 s must not declare the other servers dead too.
  ReplicatedJob job(3, 2, 5);
  job.Start(/*rounds=*/40000);
  if (HasFatalFailure()) return;
  job.WaitForPushes(1, 2000);
  if (HasFatalFailure()) return;
  job.servers[1]->Signal(SIGSTOP);
  Subprocess* sched = job.cluster.scheduler();
  ASSERT_TRUE(WaitForOutput(sched, "fail over to", absl::Seconds(30)))
      << job.cluster.Output();
  // It comes back while the workers still push to its successor.
  job.servers[1]->Signal(SIGCONT);
  absl::StatusOr<int> code = job.servers[1]->Wait(kJobTimeout);
  ASSERT_TRUE(code.ok()) << job.cluster.Output();
  EXPECT_EQ(*code, kExitOutOfJob) << job.servers[1]->Output();
  EXPECT_TRUE(absl::StrContains(job.servers[1]->Output(), "declared dead"))
      << job.servers[1]->Output();
  EXPECT_TRUE(absl::StrContains(job.servers[1]->Output(), "is out of the job"))
      << job.servers[1]->Output();
  job.ExpectExactSums();
  EXPECT_TRUE(absl::StrContains(sched->Output(), "sent no heartbeat"))
      << sched->Output();
}

TEST(FencingTest, TwoServersKilledInTurnWithThreeCopies) {
  ReplicatedJob job(5, 3, 60);
  job.Start(/*rounds=*/30000);
  if (HasFatalFailure()) return;
  job.WaitForPushes(1, 1000);
  if (HasFatalFailure()) return;
  job.servers[1]->Signal(SIGKILL);
  Subprocess* sched = job.cluster.scheduler();
  ASSERT_TRUE(
      WaitForOutput(sched, "key-range map version 2", absl::Seconds(30)))
      << job.cluster.Output();
  // Its neighbour, which holds copies of the same ranges, goes next.
  job.WaitForPushes(2, 2000);
  if (HasFatalFailure()) return;
  job.servers[2]->Signal(SIGKILL);
  ASSERT_TRUE(
      WaitForOutput(sched, "key-range map version 3", absl::Seconds(30)))
      << job.cluster.Output();
  job.ExpectExactSums();
}

}  // namespace
}  // namespace petrel
