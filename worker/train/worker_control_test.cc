#include "worker/train/worker_control.h"

#include <atomic>
#include <optional>
#include <string>
#include <thread>

#include "gtest/gtest.h"

#include "cluster/testing/van_cluster.h"
#include "job/checkpoint_protocol.h"

namespace petrel {
namespace {

constexpr absl::Duration kTimeout = absl::Seconds(10);

// One worker with its WorkerControl and the scheduler's end of the control
// app, which records the answers and the requests it gets.
class WorkerControlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(cluster_.Start().ok());
    control_ = std::make_unique<WorkerControl>(cluster_.worker(0));
    ASSERT_TRUE(control_->Start().ok());
    scheduler_ =
        std::make_unique<SimpleApp>(kControlApp, 0, cluster_.scheduler());
    scheduler_->set_response_handler([this](const SimpleData& d, SimpleApp*) {
      absl::MutexLock lock(&mu_);
      answer_ = d.body;
    });
    scheduler_->set_request_handler([this](const SimpleData& d, SimpleApp* a) {
      {
        absl::MutexLock lock(&mu_);
        requests_.push_back(std::to_string(d.head) + " " + d.body);
      }
      a->Response(d).IgnoreError();
    });
    ASSERT_TRUE(scheduler_->Start().ok());
  }

  // Sends `head` to the worker and waits for the answer.
  std::string Ask(int head, const std::string& body = "") {
    int ts = scheduler_->Request(head, body, WorkerRankToId(0));
    EXPECT_TRUE(scheduler_->Wait(ts, kTimeout).ok());
    absl::MutexLock lock(&mu_);
    return answer_;
  }

  // The worker's handler runs on its van thread: wait for it to record
  // the pause (a short poll with a deadline).
  bool AwaitPauseRequested() {
    const absl::Time deadline = absl::Now() + kTimeout;
    while (!control_->pause_requested()) {
      if (absl::Now() > deadline) return false;
      std::this_thread::yield();
    }
    return true;
  }

  static pb::WorkerPosition At(int clock) {
    pb::WorkerPosition p;
    p.set_clock(clock);
    p.set_examples_in_epoch(clock * 10);
    return p;
  }

  VanCluster cluster_{ClusterOfSize(1, 1)};
  std::unique_ptr<WorkerControl> control_;
  absl::Mutex mu_;
  std::string answer_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> requests_ ABSL_GUARDED_BY(mu_);
  // Made once the cluster started. Last, so it is destroyed first: the van
  // thread calls its handlers until then.
  std::unique_ptr<SimpleApp> scheduler_;
};

TEST_F(WorkerControlTest, PauseAnswersWithThePositionAndHoldsUntilResume) {
  int ts = scheduler_->Request(kPause, "", WorkerRankToId(0));
  ASSERT_TRUE(AwaitPauseRequested());
  std::atomic<bool> returned{false};
  absl::Status paused;
  std::thread trainer([&] {
    paused = control_->Pause(At(5), kTimeout);
    returned = true;
  });
  ASSERT_TRUE(scheduler_->Wait(ts, kTimeout).ok());
  {
    absl::MutexLock lock(&mu_);
    absl::StatusOr<pb::WorkerPosition> p = DecodeWorkerPosition(answer_);
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(p->clock(), 5);
    EXPECT_EQ(p->examples_in_epoch(), 50);
    EXPECT_FALSE(p->finished());
  }
  EXPECT_FALSE(returned.load());  // held until kResume
  Ask(kResume);
  trainer.join();
  EXPECT_TRUE(paused.ok()) << paused;
  EXPECT_FALSE(control_->pause_requested());
}

TEST_F(WorkerControlTest, StopWhilePausedAbortsWithTheReason) {
  int ts = scheduler_->Request(kPause, "", WorkerRankToId(0));
  ASSERT_TRUE(AwaitPauseRequested());
  absl::Status paused;
  std::thread trainer([&] { paused = control_->Pause(At(1), kTimeout); });
  ASSERT_TRUE(scheduler_->Wait(ts, kTimeout).ok());
  Ask(kStop, "job stopped: SIGTERM");
  trainer.join();
  EXPECT_EQ(paused.code(), absl::StatusCode::kAborted);
  EXPECT_EQ(paused.message(), "job stopped: SIGTERM");
  EXPECT_EQ(control_->stop_reason(), "job stopped: SIGTERM");
}

TEST_F(WorkerControlTest, StopLocallyEndsTraining) {
  EXPECT_FALSE(control_->stop_reason().has_value());
  control_->StopLocally("SIGTERM received");
  EXPECT_EQ(control_->stop_reason(), "SIGTERM received");
}

TEST_F(WorkerControlTest, FinishedWorkerAnswersAtOnce) {
  // A pause pending when the share ends is answered by SetFinished.
  int ts = scheduler_->Request(kPause, "", WorkerRankToId(0));
  ASSERT_TRUE(AwaitPauseRequested());
  control_->SetFinished(At(9));
  ASSERT_TRUE(scheduler_->Wait(ts, kTimeout).ok());
  {
    absl::MutexLock lock(&mu_);
    absl::StatusOr<pb::WorkerPosition> p = DecodeWorkerPosition(answer_);
    ASSERT_TRUE(p.ok());
    EXPECT_TRUE(p->finished());
    EXPECT_EQ(p->clock(), 9);
  }
  // Later pauses are answered by the handler itself.
  absl::StatusOr<pb::WorkerPosition> p = DecodeWorkerPosition(Ask(kPause));
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->finished());
  EXPECT_FALSE(control_->pause_requested());
}

TEST_F(WorkerControlTest, AsksTheSchedulerForCheckpointsAndStops) {
  control_->RequestCheckpoint("every_batches");
  EXPECT_TRUE(control_->RequestStop("SIGTERM received"));
  const absl::Time deadline = absl::Now() + kTimeout;
  absl::MutexLock lock(&mu_);
  auto both = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return requests_.size() == 2;
  };
  ASSERT_TRUE(mu_.AwaitWithDeadline(absl::Condition(&both), deadline));
  EXPECT_EQ(requests_[0], std::to_string(kCheckpoint) + " every_batches");
  EXPECT_EQ(requests_[1], std::to_string(kStopJob) + " SIGTERM received");
}

}  // namespace
}  // namespace petrel

namespace petrel {
namespace {

TEST(WorkerControlAloneTest, RequestStopFailsWithoutTheSchedulersApp) {
  VanCluster cluster(ClusterOfSize(1, 1));
  ASSERT_TRUE(cluster.Start().ok());
  WorkerControl control(cluster.worker(0));
  ASSERT_TRUE(control.Start().ok());
  EXPECT_FALSE(control.RequestStop("SIGTERM", absl::Milliseconds(300)));
}

}  // namespace
}  // namespace petrel
