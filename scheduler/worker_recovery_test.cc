#include "scheduler/worker_recovery.h"

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

#include "base/testing/wait_until.h"
#include "cluster/simple_app.h"
#include "cluster/testing/van_cluster.h"
#include "job/checkpoint_protocol.h"
#include "job/recovery_protocol.h"

namespace petrel {
namespace {

constexpr absl::Duration kTimeout = absl::Seconds(10);
constexpr int kBatch = 100;

// The test's scheduler: joins nodes (JoinResponder) and runs the
// WorkerRecovery under test.
class RecoveryControl : public ClusterControl {
 public:
  explicit RecoveryControl(Postoffice* po)
      : join_(po), recovery_(po, [this](const std::string& reason) {
          absl::MutexLock lock(&mu_);
          failures_.push_back(reason);
        }) {
    EXPECT_TRUE(recovery_.Start().ok());
  }
  absl::Status Run() override { return join_.Run(); }
  void Interrupt(const std::string& reason) override {
    join_.Interrupt(reason);
  }
  WorkerRecovery* recovery() { return &recovery_; }
  std::vector<std::string> failures() {
    absl::MutexLock lock(&mu_);
    return failures_;
  }

 private:
  absl::Mutex mu_;
  std::vector<std::string> failures_ ABSL_GUARDED_BY(mu_);
  JoinResponder join_;
  WorkerRecovery recovery_;
};

pb::DataPiece Piece(int64_t id, int epoch, int64_t in_epoch, int end,
                    int64_t trained) {
  pb::DataPiece p;
  p.set_id(id);
  p.set_shard(static_cast<int>(id < 3 ? id : -1));
  p.set_epoch(epoch);
  p.set_examples_in_epoch(in_epoch);
  p.set_end_epoch(end);
  p.set_examples_trained(trained);
  return p;
}

pb::WorkerProgress Progress(int64_t clock, std::vector<pb::DataPiece> pieces) {
  pb::WorkerProgress p;
  p.set_clock(clock);
  p.set_batch_size(kBatch);
  for (pb::DataPiece& piece : pieces) {
    p.set_examples_trained(p.examples_trained() + piece.examples_trained());
    *p.add_pieces() = std::move(piece);
  }
  return p;
}

class WorkerRecoveryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    VanClusterOptions o = ClusterOfSize(2, 3);
    o.control_factory = [](Postoffice* po) {
      return std::make_unique<RecoveryControl>(po);
    };
    cluster_ = std::make_unique<VanCluster>(o);
    ASSERT_TRUE(cluster_->Start().ok());
    control_ = static_cast<RecoveryControl*>(cluster_->control());
    recovery_ = control_->recovery();
    // Server i last saw worker 2 at clock 12 + 2i.
    for (int i = 0; i < 2; ++i) {
      servers_.push_back(
          std::make_unique<SimpleApp>(kRecoveryApp, 0, cluster_->server(i)));
      servers_.back()->set_request_handler(
          [i](const SimpleData& d, SimpleApp* app) {
            EXPECT_EQ(d.head, kDropWorker);
            app->Response(d, std::to_string(12 + 2 * i)).IgnoreError();
          });
      ASSERT_TRUE(servers_.back()->Start().ok());
    }
    for (int i = 0; i < 3; ++i) {
      workers_.push_back(
          std::make_unique<SimpleApp>(kRecoveryApp, 0, cluster_->worker(i)));
      SimpleApp* app = workers_.back().get();
      app->set_response_handler([this, i](const SimpleData& d, SimpleApp*) {
        absl::MutexLock lock(&mu_);
        replies_[i] = d.body;
      });
      ASSERT_TRUE(app->Start().ok());
    }
  }

  // Sends `head` with `progress` from worker `rank` and returns the answer.
  pb::RecoveryReply Send(int rank, int head,
                         const pb::WorkerProgress& progress) {
    SimpleApp* app = workers_[rank].get();
    int ts = app->Request(head, ProtoToBody(progress), kSchedulerId);
    EXPECT_TRUE(app->Wait(ts, kTimeout).ok());
    absl::MutexLock lock(&mu_);
    pb::RecoveryReply reply;
    if (!replies_[rank].empty()) {
      EXPECT_TRUE(ProtoFromBody(replies_[rank], &reply));
    }
    return reply;
  }

  std::unique_ptr<VanCluster> cluster_;
  RecoveryControl* control_ = nullptr;
  WorkerRecovery* recovery_ = nullptr;
  std::vector<std::unique_ptr<SimpleApp>> servers_;
  absl::Mutex mu_;
  std::string replies_[3] ABSL_GUARDED_BY(mu_);
  // Last, so they are destroyed first: the van threads call their handlers
  // until then.
  std::vector<std::unique_ptr<SimpleApp>> workers_;
};

TEST_F(WorkerRecoveryTest, ADeadWorkersDataGoesToTheLiveWorkers) {
  // Not reported yet: not a training worker, the job cannot go on.
  EXPECT_FALSE(recovery_->OnWorkerLost(WorkerRankToId(2)));
  // Three epochs each; worker 2 is in epoch 2 (0-based 1) at example 512.
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(Send(r, kProgress, Progress(10, {Piece(r, 1, 0, 3, 1000)}))
                  .pieces_size(),
              0);
  }
  Send(2, kProgress, Progress(10, {Piece(2, 1, 512, 3, 1512)}));
  ASSERT_TRUE(recovery_->OnWorkerLost(WorkerRankToId(2)));
  // Its rest, one piece per epoch, goes round robin to the workers holding
  // the fewest pieces, as they report.
  pb::RecoveryReply r0, r1;
  ASSERT_TRUE(WaitUntil([&] {
    if (r0.pieces_size() == 0) {
      r0 = Send(0, kProgress, Progress(11, {Piece(0, 1, 100, 3, 1100)}));
    }
    if (r1.pieces_size() == 0) {
      r1 = Send(1, kProgress, Progress(11, {Piece(1, 1, 100, 3, 1100)}));
    }
    return r0.pieces_size() > 0 && r1.pieces_size() > 0;
  }));
  ASSERT_EQ(r0.pieces_size(), 1);
  ASSERT_EQ(r1.pieces_size(), 1);
  EXPECT_EQ(r0.pieces(0).shard(), 2);
  EXPECT_EQ(r0.pieces(0).epoch(), 1);
  EXPECT_EQ(r0.pieces(0).examples_in_epoch(), 512);
  EXPECT_EQ(r0.pieces(0).end_epoch(), 2);
  EXPECT_EQ(r1.pieces(0).epoch(), 2);
  EXPECT_EQ(r1.pieces(0).examples_in_epoch(), 0);
  EXPECT_EQ(r1.pieces(0).end_epoch(), 3);
  std::vector<pb::WorkerDeath> deaths = recovery_->deaths();
  ASSERT_EQ(deaths.size(), 1u);
  EXPECT_EQ(deaths[0].rank(), 2);
  EXPECT_EQ(deaths[0].epoch(), 1);
  EXPECT_EQ(deaths[0].examples_trained(), 1512);
  // The servers saw clock 14; its last report said 10.
  EXPECT_EQ(deaths[0].trained_twice(), 4 * kBatch);
  EXPECT_EQ(deaths[0].reassigned_to_size(), 2);
  pb::DataPiece p0 = r0.pieces(0);
  pb::DataPiece p1 = r1.pieces(0);
  p0.set_epoch(2);
  p0.set_examples_trained(488);
  p1.set_epoch(3);
  p1.set_examples_trained(1000);
  // kDone waits until every live worker is done.
  pb::RecoveryReply end0;
  std::thread done0([&] {
    end0 = Send(0, kDone, Progress(40, {Piece(0, 3, 0, 3, 3000), p0}));
  });
  pb::RecoveryReply end1 =
      Send(1, kDone, Progress(40, {Piece(1, 3, 0, 3, 3000), p1}));
  done0.join();
  for (const pb::RecoveryReply& end : {end0, end1}) {
    EXPECT_TRUE(end.finished());
    EXPECT_EQ(end.leader(), 0);
    ASSERT_EQ(end.deaths_size(), 1);
    EXPECT_EQ(end.deaths(0).rank(), 2);
    EXPECT_EQ(end.redistributed(), 1488);
    EXPECT_EQ(end.pieces_size(), 0);
  }
  // The job is finished: a death now is no longer survived here.
  EXPECT_FALSE(recovery_->OnWorkerLost(WorkerRankToId(1)));
}

TEST_F(WorkerRecoveryTest, TheLastLiveWorkerIsNotLetGo) {
  for (int r = 0; r < 3; ++r) {
    Send(r, kProgress, Progress(1, {Piece(r, 0, 100, 1, 100)}));
  }
  EXPECT_TRUE(recovery_->OnWorkerLost(WorkerRankToId(2)));
  EXPECT_TRUE(recovery_->OnWorkerLost(WorkerRankToId(1)));
  EXPECT_FALSE(recovery_->OnWorkerLost(WorkerRankToId(0)));
  ASSERT_TRUE(WaitUntil([&] { return recovery_->deaths().size() == 2; }));
  // Worker 2's piece went to worker 0, then worker 1's to worker 0 too.
  EXPECT_EQ(recovery_->deaths()[1].reassigned_to_size(), 1);
  EXPECT_EQ(recovery_->deaths()[1].reassigned_to(0), 0);
}

// A worker whose training failed (bad data, a deadline) fails the job at
// once, and its death is not survived.
TEST_F(WorkerRecoveryTest, AFailedWorkerFailsTheJob) {
  for (int r = 0; r < 3; ++r) {
    Send(r, kProgress, Progress(1, {Piece(r, 0, 100, 1, 100)}));
  }
  SimpleApp* app = workers_[1].get();
  ASSERT_TRUE(
      app->Wait(app->Request(kFailed, "train.svm:7: bad label", kSchedulerId),
                kTimeout)
          .ok());
  EXPECT_EQ(
      control_->failures(),
      std::vector<std::string>{"worker 1 failed: train.svm:7: bad label"});
  EXPECT_FALSE(recovery_->OnWorkerLost(WorkerRankToId(1)));
}

// Worker 0's evaluation says stop (early stopping): every worker hears it
// in its next answer, a dead worker's data is not dealt out any more, and
// the job finishes once the live workers are done.
TEST_F(WorkerRecoveryTest, EarlyStoppingStopsEveryWorker) {
  for (int r = 0; r < 3; ++r) {
    EXPECT_FALSE(Send(r, kProgress, Progress(1, {Piece(r, 0, 100, 3, 100)}))
                     .stop_training());
  }
  pb::EvalReport report;
  report.set_dataset("validation");
  report.set_stop_training(true);
  report.set_reason("no improvement");
  SimpleApp* app = workers_[0].get();
  ASSERT_TRUE(app->Wait(app->Request(kEval, ProtoToBody(report), kSchedulerId),
                        kTimeout)
                  .ok());
  EXPECT_TRUE(Send(1, kProgress, Progress(2, {Piece(1, 0, 200, 3, 200)}))
                  .stop_training());
  ASSERT_TRUE(recovery_->OnWorkerLost(WorkerRankToId(2)));
  ASSERT_TRUE(WaitUntil([&] { return recovery_->deaths().size() == 1; }));
  EXPECT_EQ(recovery_->deaths()[0].reassigned_to_size(), 0);
  pb::RecoveryReply end0;
  std::thread done0(
      [&] { end0 = Send(0, kDone, Progress(2, {Piece(0, 0, 200, 3, 200)})); });
  pb::RecoveryReply end1 =
      Send(1, kDone, Progress(2, {Piece(1, 0, 200, 3, 200)}));
  done0.join();
  for (const pb::RecoveryReply& end : {end0, end1}) {
    EXPECT_TRUE(end.finished());
    EXPECT_TRUE(end.stop_training());
    EXPECT_EQ(end.pieces_size(), 0);
  }
}

}  // namespace
}  // namespace petrel
