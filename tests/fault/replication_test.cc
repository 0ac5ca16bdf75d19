// Replicated servers with the real daemons on 127.0.0.1 (docs/failures.md,
// "Replicated servers"): petrel-worker check jobs push to 3 servers that
// keep 2 copies of each key range (--replicas=2); a server is killed (or
// stopped) while they push, its ranges fail over to a replica, and the
// jobs still end with every key's sum exact: every acknowledged push is
// there exactly once. The check job's own pull-and-compare is the oracle
// (worker/train/check_job.h).
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <signal.h>
#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

#include "base/out_of_job.h"
#include "tests/fault/replicated_job.h"
#include "tests/harness/daemon_cluster.h"

namespace petrel {
namespace {

TEST(ReplicationTest, KilledServerFailsOverWithExactSums) {
  ReplicatedJob job(3, 2, 60);
  job.Start(/*rounds=*/20000);
  if (HasFatalFailure()) return;
  job.WaitForPushes(1, 2000);
  if (HasFatalFailure()) return;
  job.servers[1]->Signal(SIGKILL);
  job.ExpectExactSums();
  const std::string sched = job.cluster.scheduler()->Output();
  EXPECT_TRUE(absl::StrContains(sched, "fail over to")) << sched;
  // The workers had requests in flight to it: they went to the successor.
  bool moved = false;
  for (Subprocess* w : job.workers) {
    moved = moved ||
            absl::StrContains(
                w->Output(), absl::StrCat("for node ", job.server_ready[1].id));
  }
  EXPECT_TRUE(moved) << job.cluster.Output();
}

TEST(ReplicationTest, ReplicasFromTheJobConfig) {
  const std::string config =
      absl::StrCat(::testing::TempDir(), "replicas_", getpid(), ".textproto");
  std::ofstream(config) << "num_servers: 3\nnum_workers: 2\nreplicas: 2\n";
  ReplicatedJob job(3, 0, 60, config);
  job.Start(/*rounds=*/20000);
  if (HasFatalFailure()) return;
  job.WaitForPushes(1, 1000);
  if (HasFatalFailure()) return;
  job.servers[1]->Signal(SIGKILL);
  job.ExpectExactSums();
  EXPECT_TRUE(
      absl::StrContains(job.cluster.scheduler()->Output(), "fail over to"))
      << job.cluster.Output();
  std::remove(config.c_str());
}

TEST(ReplicationTest, EachServerKilledInTurnAcrossRuns) {
  // Killing rank 0 and rank 2 exercises the ring's wrap-around.
  for (int victim : {0, 2}) {
    ReplicatedJob job(3, 2, 60);
    job.Start(/*rounds=*/15000);
    if (HasFatalFailure()) return;
    job.WaitForPushes(victim, 1000);
    if (HasFatalFailure()) return;
    job.servers[victim]->Signal(SIGKILL);
    job.ExpectExactSums();
  }
}

// Stopped (SIGSTOP), the server is declared dead by its missing
// heartbeats and its ranges fail over; resumed while the job runs on, it
// is told it is out of the job and leaves quietly (exit 3, which
// petrel-launch takes as a lost server, not a failed job).
TEST(ReplicationTest, StoppedServerIsCaughtByHeartbeatsAndFailsOver) {
  ReplicatedJob job(3, 2, 2);
  job.Start(/*rounds=*/60000);
  if (HasFatalFailure()) return;
  job.WaitForPushes(1, 2000);
  if (HasFatalFailure()) return;
  job.servers[1]->Signal(SIGSTOP);
  ASSERT_TRUE(
      job.cluster.scheduler()->WaitForLine("fail over to", kJobTimeout).ok())
      << job.cluster.Output();
  job.servers[1]->Signal(SIGCONT);
  absl::StatusOr<int> left = job.servers[1]->Wait(kJobTimeout);
  ASSERT_TRUE(left.ok()) << job.cluster.Output();
  EXPECT_EQ(*left, kExitOutOfJob) << job.servers[1]->Output();
  EXPECT_TRUE(absl::StrContains(job.servers[1]->Output(), "is out of the job"))
      << job.servers[1]->Output();
  job.ExpectExactSums();
  const std::string sched = job.cluster.scheduler()->Output();
  EXPECT_TRUE(absl::StrContains(sched, "sent no heartbeat")) << sched;
  EXPECT_TRUE(absl::StrContains(sched, "fail over to")) << sched;
}

TEST(ReplicationTest, LosingEveryCopyOfARangeFailsTheJob) {
  // Two adjacent servers hold both copies of some ranges.
  ReplicatedJob job(3, 2, 60);
  job.Start(/*rounds=*/1000000);
  if (HasFatalFailure()) return;
  job.WaitForPushes(1, 500);
  if (HasFatalFailure()) return;
  job.servers[1]->Signal(SIGKILL);
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (
      absl::Now() < deadline &&
      !absl::StrContains(job.cluster.scheduler()->Output(), "fail over to")) {
    absl::SleepFor(absl::Milliseconds(20));  // polling, with a deadline
  }
  job.servers[2]->Signal(SIGKILL);
  absl::StatusOr<int> code = job.cluster.scheduler()->Wait(kJobTimeout);
  ASSERT_TRUE(code.ok()) << job.cluster.Output();
  EXPECT_EQ(*code, 1);
  const std::string sched = job.cluster.scheduler()->Output();
  EXPECT_TRUE(absl::StrContains(sched, "lost all of its 2 replica(s)"))
      << sched;
  for (Subprocess* w : job.workers) {
    absl::StatusOr<int> wc = w->Wait(kJobTimeout);
    ASSERT_TRUE(wc.ok()) << job.cluster.Output();
    EXPECT_EQ(*wc, 1);
  }
}

// The scheduler dies and a --recover one, started without --replicas,
// takes the job back: it routes by the replica map the nodes report, so a
// server killed afterwards still fails over, with exact sums.
TEST(ReplicationTest, SchedulerRecoveredFromTheNodesStillFailsOver) {
  ReplicatedJob job(3, 2, 60);
  job.Start(/*rounds=*/40000);
  if (HasFatalFailure()) return;
  job.WaitForPushes(1, 1000);
  if (HasFatalFailure()) return;
  job.cluster.scheduler()->Signal(SIGKILL);
  ASSERT_TRUE(job.cluster.scheduler()->Wait(kJobTimeout).ok());
  std::vector<std::string> argv = {
      std::string(PETREL_BIN_DIR) + "/petrel-scheduler",
      absl::StrCat("--port=", job.cluster.scheduler_announce().port),
      "--recover",
      "--num_servers=3",
      "--num_workers=2",
      "--join_timeout_s=30",
      "--heartbeat_interval_ms=200"};
  for (const std::string& f : LoopbackFlags()) argv.push_back(f);
  absl::StatusOr<std::unique_ptr<Subprocess>> scheduler = StartProgram(argv);
  ASSERT_TRUE(scheduler.ok()) << scheduler.status();
  ASSERT_TRUE((*scheduler)->WaitForLine("recovered the job", kJobTimeout).ok())
      << (*scheduler)->Output() << job.cluster.Output();
  job.servers[1]->Signal(SIGKILL);
  for (Subprocess* w : job.workers) {
    absl::StatusOr<int> code = w->Wait(kJobTimeout);
    ASSERT_TRUE(code.ok()) << (*scheduler)->Output() << job.cluster.Output();
    EXPECT_EQ(*code, 0) << job.cluster.Output();
    EXPECT_TRUE(absl::StrContains(w->Output(), "ok=true")) << w->Output();
  }
  absl::StatusOr<int> code = (*scheduler)->Wait(kJobTimeout);
  ASSERT_TRUE(code.ok()) << (*scheduler)->Output();
  EXPECT_EQ(*code, 0) << (*scheduler)->Output();
  EXPECT_TRUE(absl::StrContains((*scheduler)->Output(), "fail over to"))
      << (*scheduler)->Output();
}

}  // namespace
}  // namespace petrel
