#include "scheduler/checkpoint_coordinator.h"

#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

#include "checkpoint/checkpoint_dir.h"
#include "checkpoint/table_file.h"
#include "cluster/simple_app.h"
#include "cluster/testing/van_cluster.h"
#include "job/checkpoint_protocol.h"

namespace petrel {
namespace {

// A cluster of 1 server and 2 workers whose control apps answer at once:
// workers pause with position clock = 10 + rank, the server "saves" with
// no files (or fails, when told to).
class CheckpointCoordinatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = absl::StrCat(
        ::testing::TempDir(), "coordinator_test_", getpid(), "_",
        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_TRUE(cluster_.Start().ok());
    for (int r = 0; r < 2; ++r) {
      auto app =
          std::make_unique<SimpleApp>(kControlApp, 0, cluster_.worker(r));
      app->set_request_handler([this, r](const SimpleData& d, SimpleApp* a) {
        if (r == silent_) return;  // a dead worker
        std::string body;
        if (d.head == kPause) {
          pb::WorkerPosition p;
          p.set_clock(10 + r);
          p.set_examples_trained(100 * (r + 1));
          body = EncodeWorkerPosition(p);
        } else if (d.head == kStop) {
          absl::MutexLock lock(&mu_);
          stops_.push_back(d.body);
        }
        a->Response(d, body).IgnoreError();
      });
      ASSERT_TRUE(app->Start().ok());
      apps_.push_back(std::move(app));
    }
    auto server =
        std::make_unique<SimpleApp>(kControlApp, 0, cluster_.server(0));
    server->set_request_handler([this](const SimpleData& d, SimpleApp* a) {
      a->Response(d, save_fails_
                         ? EncodeSaveReply(absl::UnavailableError("disk full"))
                         : EncodeSaveReply(SaveOneRow(d.body)))
          .IgnoreError();
    });
    ASSERT_TRUE(server->Start().ok());
    apps_.push_back(std::move(server));
  }

  // What a server with one table of one row writes into `dir`.
  static absl::StatusOr<pb::CheckpointManifest> SaveOneRow(
      const std::string& dir) {
    TableFileInfo info;
    auto writer =
        TableFileWriter::Create(dir + "/" + TableFileName(0, 0), info);
    if (!writer.ok()) return writer.status();
    const float row[1] = {0.5f};
    if (absl::Status s = (*writer)->Append(7, row); !s.ok()) return s;
    absl::StatusOr<pb::CheckpointFile> file = (*writer)->Finish();
    if (!file.ok()) return file.status();
    pb::CheckpointManifest m;
    pb::CheckpointTable* t = m.add_tables();
    t->set_dim(1);
    t->set_stride(1);
    t->set_optimizer(info.optimizer);
    file->set_server_rank(0);
    file->set_table_id(0);
    *m.add_files() = *file;
    return m;
  }

  void TearDown() override {
    coordinator_.reset();
    apps_.clear();
    std::system(("rm -rf " + root_).c_str());
  }

  void StartCoordinator(const std::string& root,
                        pb::CheckpointConfig::OnFailure on_failure =
                            pb::CheckpointConfig::ON_FAILURE_CONTINUE,
                        float every_seconds = 0,
                        std::function<std::vector<int>()> live = nullptr,
                        bool wait_for_start_load = false) {
    CheckpointCoordinatorOptions o;
    o.wait_for_start_load = wait_for_start_load;
    if (wait_for_start_load) {
      o.job.mutable_checkpoint()->set_restore_from("latest");
    }
    o.job.mutable_checkpoint()->set_dir(root);
    o.job.mutable_checkpoint()->set_every_seconds(every_seconds);
    o.job.mutable_checkpoint()->set_keep(2);
    o.job.mutable_checkpoint()->set_on_failure(on_failure);
    o.timeout = absl::Seconds(10);
    coordinator_ = std::make_unique<CheckpointCoordinator>(
        cluster_.scheduler(), o, [this](const absl::Status& s) {
          end_ = s;
          ended_.Notify();
        });
    if (live) coordinator_->set_live_workers(std::move(live));
    ASSERT_TRUE(coordinator_->Start().ok());
  }

  VanCluster cluster_{ClusterOfSize(1, 2)};
  std::vector<std::unique_ptr<SimpleApp>> apps_;
  std::unique_ptr<CheckpointCoordinator> coordinator_;
  std::string root_;
  std::atomic<bool> save_fails_{false};
  std::atomic<int> silent_{-1};
  absl::Mutex mu_;
  std::vector<std::string> stops_ ABSL_GUARDED_BY(mu_);
  absl::Notification ended_;
  absl::Status end_;
};

// A worker that died (it answers nothing) is not asked: the checkpoint
// records the live workers only.
TEST_F(CheckpointCoordinatorTest, SkipsWorkersThatDied) {
  silent_ = 1;
  StartCoordinator(root_, pb::CheckpointConfig::ON_FAILURE_CONTINUE, 0,
                   [] { return std::vector<int>{WorkerRankToId(0)}; });
  coordinator_->RequestCheckpoint("on_demand");
  ASSERT_TRUE(coordinator_->WaitForAttempts(1, absl::Seconds(10)));
  EXPECT_EQ(coordinator_->completed(), 1);
  absl::StatusOr<pb::CheckpointManifest> m =
      ReadManifest(CheckpointPath(root_, 1));
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->workers_size(), 1);
  EXPECT_EQ(m->workers(0).rank(), 0);
}

TEST_F(CheckpointCoordinatorTest, RecordsEveryWorkersPositionAndTheRanges) {
  StartCoordinator(root_);
  coordinator_->RequestCheckpoint("on_demand");
  ASSERT_TRUE(coordinator_->WaitForAttempts(1, absl::Seconds(10)));
  EXPECT_EQ(coordinator_->completed(), 1);
  absl::StatusOr<pb::CheckpointManifest> m =
      ReadManifest(CheckpointPath(root_, 1));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->reason(), "on_demand");
  EXPECT_EQ(m->num_servers(), 1);
  EXPECT_GT(m->range_begins_size(), 0);
  EXPECT_EQ(m->range_begins_size(), m->range_owners_size());
  ASSERT_EQ(m->workers_size(), 2);
  EXPECT_EQ(m->workers(0).rank(), 0);
  EXPECT_EQ(m->workers(0).clock(), 10);
  EXPECT_EQ(m->workers(1).rank(), 1);
  EXPECT_EQ(m->workers(1).examples_trained(), 200);
  EXPECT_EQ(m->tables_size(), 1);
  EXPECT_FALSE(ended_.HasBeenNotified());
}

TEST_F(CheckpointCoordinatorTest, EverySecondsKeepsTheNewestOnes) {
  StartCoordinator(root_, pb::CheckpointConfig::ON_FAILURE_CONTINUE, 0.02f);
  ASSERT_TRUE(coordinator_->WaitForAttempts(3, absl::Seconds(10)));
  coordinator_->Stop();
  EXPECT_EQ(coordinator_->failed(), 0);
  absl::StatusOr<std::vector<uint64_t>> ids = ListCheckpoints(root_);
  ASSERT_TRUE(ids.ok());
  ASSERT_EQ(ids->size(), 2u);  // keep: 2
  absl::StatusOr<pb::CheckpointManifest> m =
      ReadManifest(CheckpointPath(root_, ids->back()));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->reason(), "every_seconds");
}

TEST_F(CheckpointCoordinatorTest, FailedSaveKeepsThePreviousCheckpoint) {
  StartCoordinator(root_);
  coordinator_->RequestCheckpoint("on_demand");
  ASSERT_TRUE(coordinator_->WaitForAttempts(1, absl::Seconds(10)));
  save_fails_ = true;
  coordinator_->RequestCheckpoint("on_demand");
  ASSERT_TRUE(coordinator_->WaitForAttempts(2, absl::Seconds(10)));
  EXPECT_EQ(coordinator_->failed(), 1);
  absl::StatusOr<std::vector<uint64_t>> ids = ListCheckpoints(root_);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, std::vector<uint64_t>{1});
  EXPECT_FALSE(ended_.HasBeenNotified());  // ON_FAILURE_CONTINUE
}

TEST_F(CheckpointCoordinatorTest, UnwritableRootStopsTheJobWhenAsked) {
  const std::string file = root_ + "_file";
  std::ofstream(file) << "x";
  StartCoordinator(file + "/ckpt", pb::CheckpointConfig::ON_FAILURE_STOP);
  coordinator_->RequestCheckpoint("every_batches");
  ASSERT_TRUE(ended_.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_EQ(end_.code(), absl::StatusCode::kAborted);
  EXPECT_EQ(coordinator_->failed(), 1);
  std::remove(file.c_str());
}

TEST_F(CheckpointCoordinatorTest, StopCheckpointsThenStopsTheWorkers) {
  StartCoordinator(root_);
  coordinator_->RequestStop("SIGTERM received");
  ASSERT_TRUE(ended_.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_EQ(end_.code(), absl::StatusCode::kAborted);
  EXPECT_NE(end_.message().find("job stopped: SIGTERM received"),
            std::string::npos)
      << end_;
  absl::StatusOr<pb::CheckpointManifest> m =
      ReadManifest(CheckpointPath(root_, 1));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->reason(), "signal");
  absl::MutexLock lock(&mu_);
  ASSERT_EQ(stops_.size(), 2u);
  EXPECT_NE(stops_[0].find("checkpoint " + CheckpointPath(root_, 1)),
            std::string::npos)
      << stops_[0];
}

// A job restored from a checkpoint takes none (so retention removes none)
// before its servers loaded theirs: timed and requested checkpoints wait,
// and come once they did.
TEST_F(CheckpointCoordinatorTest, NoCheckpointBeforeTheServersLoaded) {
  StartCoordinator(root_, pb::CheckpointConfig::ON_FAILURE_CONTINUE, 0.01f,
                   nullptr, /*wait_for_start_load=*/true);
  coordinator_->RequestCheckpoint("on_demand");
  // 30 timer periods and the request: nothing attempted while loading.
  EXPECT_FALSE(coordinator_->WaitForAttempts(1, absl::Milliseconds(300)));
  absl::StatusOr<std::vector<uint64_t>> ids = ListCheckpoints(root_);
  ASSERT_TRUE(ids.ok());
  EXPECT_TRUE(ids->empty());
  coordinator_->OnStartLoaded();
  ASSERT_TRUE(coordinator_->WaitForAttempts(2, absl::Seconds(10)));
  absl::StatusOr<pb::CheckpointManifest> m =
      ReadManifest(CheckpointPath(root_, 1));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->reason(), "on_demand");  // the queued request first
}

// A stop while the servers still load takes no checkpoint (their tables
// are partly loaded) and stops the workers, saying so.
TEST_F(CheckpointCoordinatorTest, StopWhileLoadingTakesNoCheckpoint) {
  StartCoordinator(root_, pb::CheckpointConfig::ON_FAILURE_CONTINUE, 0, nullptr,
                   /*wait_for_start_load=*/true);
  coordinator_->RequestStop("SIGTERM received");
  ASSERT_TRUE(ended_.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_EQ(end_.code(), absl::StatusCode::kAborted);
  EXPECT_NE(end_.message().find("the servers had not loaded latest yet"),
            std::string::npos)
      << end_;
  EXPECT_EQ(coordinator_->completed() + coordinator_->failed(), 0);
  absl::StatusOr<std::vector<uint64_t>> ids = ListCheckpoints(root_);
  ASSERT_TRUE(ids.ok());
  EXPECT_TRUE(ids->empty());
  absl::MutexLock lock(&mu_);
  EXPECT_EQ(stops_.size(), 2u);
}

TEST_F(CheckpointCoordinatorTest, EndOfTrainingTakesAFinalCheckpoint) {
  StartCoordinator(root_);
  coordinator_->OnWorkersDone();
  ASSERT_TRUE(ended_.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_TRUE(end_.ok()) << end_;
  absl::StatusOr<pb::CheckpointManifest> m =
      ReadManifest(CheckpointPath(root_, 1));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->reason(), "end");
}

}  // namespace
}  // namespace petrel
