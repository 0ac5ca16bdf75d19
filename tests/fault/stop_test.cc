// SIGTERM stops every daemon promptly whatever state the job is in
// (docs/failures.md, "Stopping"): the real daemons of a training job (2
// servers, 2 workers, LR on petrel-datagen data), then a process dies by
// kill -9 and every remaining one gets SIGTERM at once, as petrel-launch
// does when a process of a job fails. Each must exit by itself (code 1,
// its "SIGTERM received" line; none needs SIGKILL) within kStopDeadline:
// generous for a loaded machine, yet well below what the same stops took
// before (7 s with the scheduler dead: each node waited 5 s for the dead
// scheduler to acknowledge its stop, then 2 s of ZeroMQ linger on what it
// had queued for it; 10 s with a worker dead: the scheduler waited for
// the unnoticed dead worker to acknowledge its stop notice).
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <signal.h>
#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

#include "tests/harness/daemon_cluster.h"
#include "tests/harness/lr_job.h"

namespace petrel {
namespace {

constexpr absl::Duration kTimeout = absl::Seconds(60);
constexpr absl::Duration kStopDeadline = absl::Seconds(5);
constexpr int kWorkers = 2;

class StopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(
        ::testing::TempDir(), "petrel_stop_test_",
        ::testing::UnitTest::GetInstance()->current_test_info()->name(), "_",
        getpid());
    std::system(("rm -rf '" + dir_ + "' && mkdir -p '" + dir_ + "'").c_str());
    const absl::Status s =
        GenerateLrData(PETREL_BIN_DIR, dir_, 20000, kTimeout);
    ASSERT_TRUE(s.ok()) << s;
    config_ = dir_ + "/job.textproto";
    // Many epochs: the job is still training when the test stops it.
    std::ofstream(config_)
        << LrJobText(dir_, kWorkers, /*max_delay=*/0)
        << "train { batch_size: 256 epochs: 1000 progress_interval_s: 0.2 }\n";
  }

  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }

  // Starts the job (`scheduler_flags` added) and waits until every worker
  // trains.
  void Start(std::vector<std::string> scheduler_flags = {}) {
    DaemonCluster::Options o;
    o.bin_dir = PETREL_BIN_DIR;
    o.num_servers = 2;
    o.num_workers = kWorkers;
    o.flags = {"--config=" + config_};
    o.scheduler_flags = std::move(scheduler_flags);
    cluster_ = std::make_unique<DaemonCluster>(o);
    absl::Status s = cluster_->StartScheduler();
    ASSERT_TRUE(s.ok()) << s << cluster_->Output();
    for (int rank = 0; rank < 2; ++rank) {
      absl::StatusOr<Subprocess*> server =
          cluster_->StartNode("petrel-server", {absl::StrCat("--rank=", rank)});
      ASSERT_TRUE(server.ok()) << server.status();
      servers_.push_back(*server);
    }
    for (int rank = 0; rank < kWorkers; ++rank) {
      absl::StatusOr<Subprocess*> worker =
          cluster_->StartNode("petrel-worker", {"--job=train", "--timeout_s=60",
                                                "--worker_progress",
                                                absl::StrCat("--rank=", rank)});
      ASSERT_TRUE(worker.ok()) << worker.status();
      workers_.push_back(*worker);
    }
    for (int rank = 0; rank < kWorkers; ++rank) {
      absl::StatusOr<std::string> line = workers_[rank]->WaitForLine(
          absl::StrCat("progress worker=", rank), kTimeout);
      ASSERT_TRUE(line.ok()) << line.status() << cluster_->Output();
    }
  }

  // Sends SIGTERM to each of `procs` at once; each must exit by itself
  // with code 1 and its signal line within kStopDeadline.
  void ExpectPromptStop(const std::vector<Subprocess*>& procs) {
    const absl::Time start = absl::Now();
    for (Subprocess* p : procs) p->Signal(SIGTERM);
    for (Subprocess* p : procs) {
      absl::StatusOr<int> code = p->Wait(start + kStopDeadline - absl::Now());
      ASSERT_TRUE(code.ok()) << "pid " << p->pid() << " still running "
                             << kStopDeadline << " after SIGTERM\n"
                             << cluster_->Output();
      EXPECT_EQ(*code, 1) << p->Output();
      EXPECT_TRUE(absl::StrContains(p->Output(), "SIGTERM received"))
          << p->Output();
    }
    std::printf("all %zu processes exited %s after SIGTERM\n", procs.size(),
                absl::FormatDuration(absl::Now() - start).c_str());
  }

  std::string dir_;
  std::string config_;
  std::unique_ptr<DaemonCluster> cluster_;
  std::vector<Subprocess*> servers_;
  std::vector<Subprocess*> workers_;
};

// Nobody can acknowledge a stop: each node stops alone, abandoning what
// it still waits for (a worker's pushes and pulls, resent to nobody).
TEST_F(StopTest, EveryNodeStopsPromptlyWhenTheSchedulerIsDead) {
  ASSERT_NO_FATAL_FAILURE(Start());
  cluster_->scheduler()->Signal(SIGKILL);
  ASSERT_TRUE(cluster_->scheduler()->Wait(kTimeout).ok());
  ExpectPromptStop({servers_[0], servers_[1], workers_[0], workers_[1]});
  EXPECT_TRUE(absl::StrContains(workers_[0]->Output(),
                                "pending request(s) and their resends"))
      << workers_[0]->Output();
}

// The scheduler gets SIGTERM before it noticed the death (here it never
// would by the connection, as for a worker whose machine vanished, and the
// heartbeat timeout is 30 s): its stop notice to the dead worker must not
// hold the job's end.
TEST_F(StopTest, EveryNodeStopsPromptlyRightAfterAWorkerDied) {
  ASSERT_NO_FATAL_FAILURE(Start({"--connection_grace_ms=0"}));
  workers_[1]->Signal(SIGKILL);
  ASSERT_TRUE(workers_[1]->Wait(kTimeout).ok());
  ExpectPromptStop(
      {cluster_->scheduler(), servers_[0], servers_[1], workers_[0]});
}

}  // namespace
}  // namespace petrel
