// Network partitions, not deaths (docs/failures.md, "Partitions"): the real
// daemons, each in a network namespace of its own (tests/harness/
// netns_lab.h), with packets between chosen hosts dropped for a while and
// then let through again. TCP connections stay up across a cut, so only
// the heartbeats can tell a cut node from a slow one.
// - a server cut off from the scheduler while the workers still reach it:
//   healed within the heartbeat timeout it stays in the job; cut past it,
//   it is declared dead, its ranges fail over, and once healed it is
//   fenced (exit 3). Either way the check jobs' sums are exact: nothing the
//   old primary acknowledged is missing from the new one, nothing is
//   applied twice;
// - a worker cut off from every other host: healed within the timeout it
//   finishes with exact sums; cut past it, a training job goes on without
//   it (it is out of the job, exit 3) and ends with its final metrics.
// Skipped, saying why, where network namespaces cannot be made (not root).
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"

#include "base/out_of_job.h"
#include "tests/fault/fault_waits.h"
#include "tests/harness/daemon_cluster.h"
#include "tests/harness/lr_job.h"
#include "tests/harness/netns_lab.h"

namespace petrel {
namespace {

constexpr absl::Duration kTimeout = absl::Seconds(90);
// Well above the stalls of a loaded 2-core machine, well below the cuts
// that are meant to outlast it.
constexpr int kHeartbeatTimeoutS = 4;
// A cut meant to heal before anyone is declared dead.
constexpr absl::Duration kShortCut = absl::Seconds(1);

constexpr int kScheduler = 0;  // the hosts of the lab
constexpr int kFirstServer = 1;

class PartitionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<NetnsLab>> lab = NetnsLab::Create(6);
    if (!lab.ok()) {
      GTEST_SKIP() << "partition tests need network namespaces: "
                   << lab.status().message();
    }
    lab_ = *std::move(lab);
  }

  // The options of a job on the lab: the scheduler on host 0, heartbeats
  // every 200 ms, a node silent for kHeartbeatTimeoutS declared dead.
  DaemonCluster::Options JobOptions(int servers, int workers) const {
    DaemonCluster::Options o;
    o.bin_dir = PETREL_BIN_DIR;
    o.num_servers = servers;
    o.num_workers = workers;
    o.flags = {"--join_timeout_s=30", "--heartbeat_interval_ms=200"};
    o.scheduler_flags = {
        absl::StrCat("--heartbeat_timeout_s=", kHeartbeatTimeoutS)};
    o.scheduler_placement = lab_->placement(kScheduler);
    return o;
  }

  // The check job: 3 servers keeping 2 copies of each range on hosts 1-3,
  // two petrel-worker check jobs on hosts 4 and 5.
  void StartCheckJob(int rounds) {
    DaemonCluster::Options o = JobOptions(3, 2);
    o.scheduler_flags.push_back("--replicas=2");
    cluster_ = std::make_unique<DaemonCluster>(o);
    ASSERT_TRUE(cluster_->StartScheduler().ok()) << cluster_->Output();
    for (int i = 0; i < 3; ++i) {
      absl::StatusOr<Subprocess*> s = cluster_->StartNode(
          "petrel-server", {}, {}, lab_->placement(kFirstServer + i));
      ASSERT_TRUE(s.ok()) << s.status();
      servers_.push_back(*s);
    }
    for (int i = 0; i < 2; ++i) {
      absl::StatusOr<Subprocess*> w = cluster_->StartNode(
          "petrel-worker",
          {absl::StrCat("--rounds=", rounds), "--num_keys=300", "--inflight=8",
           "--timeout_s=30"},
          {}, lab_->placement(4 + i));
      ASSERT_TRUE(w.ok()) << w.status();
      workers_.push_back(*w);
    }
    for (Subprocess* p : servers_) {
      ASSERT_TRUE(cluster_->WaitReady(p).ok()) << cluster_->Output();
    }
    for (Subprocess* p : workers_) {
      ASSERT_TRUE(cluster_->WaitReady(p).ok()) << cluster_->Output();
    }
  }

  // Fails unless the check workers still push (the fault hits the job in
  // full flow).
  void ExpectRunning(const std::string& event) {
    absl::Status s = cluster_->StillRunning(workers_, event, "the rounds");
    ASSERT_TRUE(s.ok()) << s.message();
  }

  // Both check workers passed and the scheduler ended the job cleanly.
  void ExpectExactSums() {
    for (Subprocess* w : workers_) {
      absl::StatusOr<int> code = w->Wait(kTimeout);
      ASSERT_TRUE(code.ok()) << cluster_->Output();
      EXPECT_EQ(*code, 0) << cluster_->Output();
      EXPECT_TRUE(absl::StrContains(w->Output(), "ok=true")) << w->Output();
    }
    absl::StatusOr<int> code = cluster_->scheduler()->Wait(kTimeout);
    ASSERT_TRUE(code.ok()) << cluster_->Output();
    EXPECT_EQ(*code, 0) << cluster_->Output();
  }

  // Declared first: destroyed after the cluster has killed its processes.
  std::unique_ptr<NetnsLab> lab_;
  std::unique_ptr<DaemonCluster> cluster_;
  std::vector<Subprocess*> servers_;
  std::vector<Subprocess*> workers_;
};

TEST_F(PartitionTest, ServerCutFromTheSchedulerBrieflyStaysInTheJob) {
  StartCheckJob(/*rounds=*/20000);
  if (HasFatalFailure()) return;
  ASSERT_TRUE(lab_->Cut(kScheduler, kFirstServer + 1).ok());
  absl::SleepFor(kShortCut);  // the fault's length, not a wait for an event
  ASSERT_TRUE(lab_->Heal().ok());
  ExpectRunning("the cut healed");
  if (HasFatalFailure()) return;
  ExpectExactSums();
  for (Subprocess* s : servers_) {
    absl::StatusOr<int> code = s->Wait(kTimeout);
    ASSERT_TRUE(code.ok()) << cluster_->Output();
    EXPECT_EQ(*code, 0) << cluster_->Output();
  }
  EXPECT_FALSE(
      absl::StrContains(cluster_->scheduler()->Output(), "declared dead"))
      << cluster_->scheduler()->Output();
}

TEST_F(PartitionTest, ServerCutFromTheSchedulerPastTheTimeoutIsFenced) {
  StartCheckJob(/*rounds=*/40000);
  if (HasFatalFailure()) return;
  Subprocess* cut = servers_[1];
  const absl::Time start = absl::Now();
  ASSERT_TRUE(lab_->Cut(kScheduler, kFirstServer + 1).ok());
  // The workers still reach it and push to it until the scheduler's
  // NODE_DEAD moves them to its successor.
  Subprocess* sched = cluster_->scheduler();
  ASSERT_TRUE(WaitForOutput(sched, "fail over to", absl::Seconds(30)))
      << cluster_->Output();
  ASSERT_TRUE(lab_->Heal().ok());
  const absl::Duration length = absl::Now() - start;
  EXPECT_LE(length, absl::Seconds(10)) << "the cut lasted " << length;
  ExpectRunning("the cut healed");
  if (HasFatalFailure()) return;
  absl::StatusOr<int> code = cut->Wait(kTimeout);
  ASSERT_TRUE(code.ok()) << cluster_->Output();
  EXPECT_EQ(*code, kExitOutOfJob) << cut->Output();
  EXPECT_TRUE(absl::StrContains(cut->Output(), "is out of the job"))
      << cut->Output();
  ExpectExactSums();
  EXPECT_TRUE(absl::StrContains(sched->Output(), "sent no heartbeat"))
      << sched->Output();
}

TEST_F(PartitionTest, WorkerCutOffBrieflyFinishesWithExactSums) {
  StartCheckJob(/*rounds=*/20000);
  if (HasFatalFailure()) return;
  ASSERT_TRUE(lab_->Isolate(4).ok());
  absl::SleepFor(kShortCut);  // the fault's length, not a wait for an event
  ASSERT_TRUE(lab_->Heal().ok());
  ExpectRunning("the cut healed");
  if (HasFatalFailure()) return;
  ExpectExactSums();
  EXPECT_FALSE(
      absl::StrContains(cluster_->scheduler()->Output(), "declared dead"))
      << cluster_->scheduler()->Output();
}

TEST_F(PartitionTest, TrainingGoesOnWithoutAWorkerCutOffPastTheTimeout) {
  const std::string dir =
      absl::StrCat(::testing::TempDir(), "petrel_partition_test_", getpid());
  ASSERT_TRUE(FreshLrData(PETREL_BIN_DIR, dir, 60000, kTimeout).ok());
  const std::string config = dir + "/job.textproto";
  std::ofstream(config)
      << LrJobText(dir, /*num_workers=*/3, /*max_delay=*/2)
      << "train { batch_size: 256 epochs: 12 progress_interval_s: 0.2 }\n";
  DaemonCluster::Options o = JobOptions(2, 3);
  o.flags.push_back("--config=" + config);
  cluster_ = std::make_unique<DaemonCluster>(o);
  ASSERT_TRUE(cluster_->StartScheduler().ok()) << cluster_->Output();
  for (int rank = 0; rank < 2; ++rank) {
    ASSERT_TRUE(cluster_
                    ->StartNode("petrel-server",
                                {absl::StrCat("--rank=", rank)}, {},
                                lab_->placement(kFirstServer + rank))
                    .ok());
  }
  for (int rank = 0; rank < 3; ++rank) {
    absl::StatusOr<Subprocess*> w = cluster_->StartNode(
        "petrel-worker",
        {"--job=train", "--timeout_s=30", "--worker_progress",
         absl::StrCat("--rank=", rank)},
        {}, lab_->placement(3 + rank));
    ASSERT_TRUE(w.ok()) << w.status();
    workers_.push_back(*w);
  }
  Subprocess* cut = workers_[2];
  ASSERT_TRUE(cut->WaitForLine("progress worker=2", kTimeout).ok())
      << cluster_->Output();
  ASSERT_TRUE(lab_->Isolate(5).ok());
  Subprocess* sched = cluster_->scheduler();
  ASSERT_TRUE(WaitForOutput(sched, "declared dead", absl::Seconds(30)))
      << cluster_->Output();
  ASSERT_TRUE(lab_->Heal().ok());
  ExpectRunning("the cut healed");
  if (HasFatalFailure()) return;
  absl::StatusOr<std::map<std::string, int>> codes =
      cluster_->WaitAll(kTimeout);
  ASSERT_TRUE(codes.ok()) << codes.status() << cluster_->Output();
  absl::StatusOr<int> cut_code = cut->Wait(absl::ZeroDuration());
  ASSERT_TRUE(cut_code.ok());
  EXPECT_EQ(*cut_code, kExitOutOfJob) << cluster_->Output();
  int failed = 0;
  for (const auto& [name, code] : *codes) failed += code != 0;
  EXPECT_EQ(failed, 1) << cluster_->Output();
  std::string out;
  for (Subprocess* w : workers_) out += w->Output();
  EXPECT_GT(ValueAfter(out, "final test_logloss", "test_logloss"), 0) << out;
  EXPECT_EQ(ValueAfter(out, "final test_logloss", "dead_workers"), 2) << out;
  EXPECT_EQ(ValueAfter(out, "final test_logloss", "train_examples"), 12 * 60000)
      << out;
  std::system(("rm -rf '" + dir + "'").c_str());
}

}  // namespace
}  // namespace petrel
