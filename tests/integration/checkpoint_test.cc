// Checkpoints end to end with the real daemons (2 servers, 2 workers, LR on
// petrel-datagen data): a job killed with SIGKILL after its second
// checkpoint and restored from it (also onto 3 servers) ends like an
// uninterrupted run; SIGUSR1 to the scheduler takes a checkpoint; SIGTERM
// to a worker, the scheduler or petrel-launch checkpoints and stops the
// whole job; warm start; an unwritable checkpoint directory and a
// checkpoint of another worker count are refused before training starts.
#include <cmath>
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
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

#include "checkpoint/checkpoint_dir.h"
#include "tests/harness/daemon_cluster.h"
#include "tests/harness/lr_job.h"

namespace petrel {
namespace {

constexpr absl::Duration kTimeout = absl::Seconds(60);
constexpr int kBatchSize = 256;
constexpr int kEveryBatches = 5;

std::string Bin(const std::string& name) {
  return std::string(PETREL_BIN_DIR) + "/" + name;
}

// One job's processes: the scheduler, 2 servers and 2 workers (ranks fixed,
// so that a restored worker gets its own position back).
struct Job {
  std::unique_ptr<DaemonCluster> cluster;
  std::vector<Subprocess*> servers;
  std::vector<Subprocess*> workers;
};

class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(
        ::testing::TempDir(), "petrel_checkpoint_test_",
        ::testing::UnitTest::GetInstance()->current_test_info()->name(), "_",
        getpid());
    std::system(("rm -rf " + dir_ + " && mkdir -p " + dir_).c_str());
    ckpt_ = dir_ + "/ckpt";
    const absl::Status s =
        GenerateLrData(PETREL_BIN_DIR, dir_, 40000, kTimeout);
    ASSERT_TRUE(s.ok()) << s;
  }

  void TearDown() override { std::system(("rm -rf " + dir_).c_str()); }

  // Writes the job config with `checkpoint` as its checkpoint section.
  std::string Config(const std::string& name, int epochs,
                     const std::string& checkpoint, int max_delay = 2) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << LrJobText(dir_, 2, max_delay)
                        << absl::StrCat("train { batch_size: ", kBatchSize,
                                        " epochs: ", epochs,
                                        " progress_interval_s: 100 }\n",
                                        "checkpoint { ", checkpoint, " }\n");
    return path;
  }

  // Starts the job's daemons with `flags` added to every one.
  Job Start(const std::string& config, std::vector<std::string> flags = {},
            int num_servers = 2) {
    Job job;
    DaemonCluster::Options o;
    o.bin_dir = PETREL_BIN_DIR;
    o.num_servers = num_servers;
    o.num_workers = 2;
    o.flags = {"--config=" + config};
    o.flags.insert(o.flags.end(), flags.begin(), flags.end());
    job.cluster = std::make_unique<DaemonCluster>(o);
    absl::Status s = job.cluster->StartScheduler();
    EXPECT_TRUE(s.ok()) << s << job.cluster->Output();
    if (!s.ok()) return job;
    for (int rank = 0; rank < num_servers; ++rank) {
      absl::StatusOr<Subprocess*> server = job.cluster->StartNode(
          "petrel-server", {absl::StrCat("--rank=", rank)});
      EXPECT_TRUE(server.ok()) << server.status();
      if (server.ok()) job.servers.push_back(*server);
    }
    for (int rank = 0; rank < 2; ++rank) {
      absl::StatusOr<Subprocess*> worker = job.cluster->StartNode(
          "petrel-worker",
          {"--job=train", "--timeout_s=60", absl::StrCat("--rank=", rank)});
      EXPECT_TRUE(worker.ok()) << worker.status();
      if (worker.ok()) job.workers.push_back(*worker);
    }
    return job;
  }

  // Waits for the scheduler's line saying checkpoint `id` is complete.
  void WaitForCheckpoint(Job& job, int id) {
    absl::StatusOr<std::string> line = job.cluster->scheduler()->WaitForLine(
        absl::StrCat("checkpoint ", id, " ("), kTimeout);
    ASSERT_TRUE(line.ok()) << line.status() << job.cluster->Output();
    ASSERT_TRUE(absl::StrContains(*line, "complete")) << *line;
  }

  // The manifest of checkpoint `id`.
  pb::CheckpointManifest Manifest(uint64_t id) {
    absl::StatusOr<pb::CheckpointManifest> m =
        ReadManifest(CheckpointPath(ckpt_, id));
    EXPECT_TRUE(m.ok()) << m.status();
    return m.ok() ? *m : pb::CheckpointManifest();
  }

  // Runs the job to its end; returns worker 0's output.
  std::string RunToEnd(Job& job) {
    absl::StatusOr<std::map<std::string, int>> codes =
        job.cluster->WaitAll(kTimeout);
    EXPECT_TRUE(codes.ok()) << codes.status() << job.cluster->Output();
    if (codes.ok()) {
      for (const auto& [name, code] : *codes) {
        EXPECT_EQ(code, 0) << name << "\n" << job.cluster->Output();
      }
    }
    return job.workers.empty() ? "" : job.workers[0]->Output();
  }

  // Every process of `job` exits 1 (stopped) within the deadline.
  void ExpectStopped(Job& job) {
    const absl::Time start = absl::Now();
    absl::StatusOr<std::map<std::string, int>> codes =
        job.cluster->WaitAll(kTimeout);
    ASSERT_TRUE(codes.ok()) << codes.status() << job.cluster->Output();
    EXPECT_LT(absl::Now() - start, absl::Seconds(30));
    for (const auto& [name, code] : *codes) {
      EXPECT_EQ(code, 1) << name << "\n" << job.cluster->Output();
    }
    for (Subprocess* w : job.workers) {
      EXPECT_TRUE(absl::StrContains(w->Output(), "job stopped"))
          << job.cluster->Output();
    }
  }

  std::string dir_;
  std::string ckpt_;
};

// Also: the checkpoint restores onto 3 servers (its rows resharded) with
// the same result, and a checkpoint of 2 workers is refused by a job of 3.
TEST_F(CheckpointTest, RestoreAfterSigkillMatchesAnUninterruptedRun) {
  // Uninterrupted: no checkpoints.
  Job plain = Start(Config("plain.textproto", 3, ""));
  std::string plain_out = RunToEnd(plain);
  const double plain_loss =
      ValueAfter(plain_out, "final test_logloss", "test_logloss");
  const double plain_examples =
      ValueAfter(plain_out, "final test_logloss", "train_examples");
  ASSERT_GT(plain_loss, 0) << plain_out;

  const std::string config = Config(
      "ckpt.textproto", 3,
      absl::StrCat("dir: \"", ckpt_, "\" every_batches: ", kEveryBatches));
  {
    Job killed = Start(config);
    WaitForCheckpoint(killed, 2);
    for (Subprocess* p : killed.workers) p->Signal(SIGKILL);
    for (Subprocess* p : killed.servers) p->Signal(SIGKILL);
    killed.cluster->scheduler()->Signal(SIGKILL);
    ASSERT_TRUE(killed.cluster->WaitAll(kTimeout).ok());
  }
  absl::StatusOr<std::vector<uint64_t>> ids = ListCheckpoints(ckpt_);
  ASSERT_TRUE(ids.ok() && ids->size() >= 2) << ids.status();
  pb::CheckpointManifest at_kill = Manifest(ids->back());
  ASSERT_EQ(at_kill.workers_size(), 2);
  EXPECT_EQ(at_kill.reason(), "every_batches");
  EXPECT_FALSE(at_kill.workers(0).finished());
  EXPECT_GT(at_kill.files_size(), 0);
  // In the first epoch the workers read text (later ones come from the
  // parsed-example cache in memory): the positions have byte offsets, and
  // the restored workers seek to them.
  const bool by_offset = at_kill.workers(0).epoch() == 0;
  if (by_offset) {
    for (const pb::WorkerPosition& p : at_kill.workers()) {
      EXPECT_GT(p.byte_offset(), 0) << p.DebugString();
      EXPECT_NE(p.input_fingerprint(), 0u) << p.DebugString();
    }
  }

  // Onto 3 servers (resharding), checkpointing elsewhere, so that the
  // checkpoints of ckpt_ stay as they are.
  Job resharded =
      Start(config,
            {"--restore_from=" + CheckpointPath(ckpt_, at_kill.id()),
             "--checkpoint_dir=" + dir_ + "/ckpt3"},
            3);
  std::string out3 = RunToEnd(resharded);
  const double loss3 = ValueAfter(out3, "final test_logloss", "test_logloss");
  EXPECT_LT(std::abs(loss3 - plain_loss) / plain_loss, 0.005)
      << "restored onto 3 servers " << loss3 << " uninterrupted " << plain_loss;
  EXPECT_EQ(ValueAfter(out3, "final test_logloss", "train_examples"),
            plain_examples);

  Job restored = Start(config, {"--restore_from=latest"});
  std::string out = RunToEnd(restored);
  const double loss = ValueAfter(out, "final test_logloss", "test_logloss");
  const double examples =
      ValueAfter(out, "final test_logloss", "train_examples");
  ASSERT_GT(loss, 0) << out;
  EXPECT_TRUE(absl::StrContains(out, "resumes at epoch=")) << out;
  if (by_offset) {
    EXPECT_TRUE(absl::StrContains(out3, "by byte_offset=")) << out3;
  }
  std::printf(
      "uninterrupted: test_logloss=%.5f train_examples=%.0f; killed after "
      "checkpoint %d (worker 0 at clock %d); restored: test_logloss=%.5f "
      "train_examples=%.0f; restored onto 3 servers: test_logloss=%.5f\n",
      plain_loss, plain_examples, static_cast<int>(at_kill.id()),
      static_cast<int>(at_kill.workers(0).clock()), loss, examples, loss3);
  EXPECT_LT(std::abs(loss - plain_loss) / plain_loss, 0.005)
      << "restored " << loss << " uninterrupted " << plain_loss;
  // Positions are exact: the same examples are trained, once each.
  EXPECT_EQ(examples, plain_examples);
  // The restored run checkpointed on, after the restored one, and ended
  // with a final checkpoint.
  absl::StatusOr<std::vector<uint64_t>> after = ListCheckpoints(ckpt_);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(Manifest(after->back()).reason(), "end");
  EXPECT_TRUE(Manifest(after->back()).workers(1).finished());

  // A checkpoint of 2 workers does not fit a job of 3: refused at start.
  absl::StatusOr<std::unique_ptr<Subprocess>> three =
      StartProgram({Bin("petrel-scheduler"), "--port=0", "--config=" + config,
                    "--num_workers=3", "--restore_from=latest",
                    "--checkpoint_dir=" + ckpt_});
  ASSERT_TRUE(three.ok());
  absl::StatusOr<int> code = (*three)->Wait(kTimeout);
  ASSERT_TRUE(code.ok());
  EXPECT_EQ(*code, 2);
  EXPECT_TRUE(absl::StrContains((*three)->Output(), "2 workers"))
      << (*three)->Output();
}

TEST_F(CheckpointTest, Sigusr1CheckpointsAndSigtermToTheSchedulerStops) {
  Job job = Start(
      Config("job.textproto", 1000, absl::StrCat("dir: \"", ckpt_, "\"")));
  for (Subprocess* w : job.workers) {
    ASSERT_TRUE(w->WaitForLine("device=", kTimeout).ok())
        << job.cluster->Output();
  }
  job.cluster->scheduler()->Signal(SIGUSR1);
  WaitForCheckpoint(job, 1);
  EXPECT_EQ(Manifest(1).reason(), "on_demand");
  EXPECT_EQ(Manifest(1).workers_size(), 2);

  job.cluster->scheduler()->Signal(SIGTERM);
  ExpectStopped(job);
  EXPECT_EQ(Manifest(2).reason(), "signal");
}

TEST_F(CheckpointTest, SigtermToAWorkerCheckpointsAndStopsTheJob) {
  Job job = Start(
      Config("job.textproto", 1000, absl::StrCat("dir: \"", ckpt_, "\"")));
  ASSERT_TRUE(job.workers[1]->WaitForLine("device=", kTimeout).ok())
      << job.cluster->Output();
  job.workers[1]->Signal(SIGTERM);
  ExpectStopped(job);
  EXPECT_EQ(Manifest(1).reason(), "signal");
  EXPECT_TRUE(absl::StrContains(job.workers[0]->Output(), "(worker 1)"))
      << job.workers[0]->Output();
}

// A scheduler without the job config cannot stop the job: a worker asked
// to stop gets no acknowledgement and stops on its own, mid-training.
TEST_F(CheckpointTest, WorkerStopsAloneWhenTheSchedulerCannotStopTheJob) {
  DaemonCluster::Options o;
  o.bin_dir = PETREL_BIN_DIR;
  o.num_servers = 1;
  o.num_workers = 1;
  DaemonCluster cluster(o);
  ASSERT_TRUE(cluster.StartScheduler().ok()) << cluster.Output();
  const std::string config = Config("job.textproto", 1000, "");
  ASSERT_TRUE(cluster.StartNode("petrel-server", {"--config=" + config}).ok());
  absl::StatusOr<Subprocess*> worker = cluster.StartNode(
      "petrel-worker", {"--job=train", "--config=" + config, "--timeout_s=60"});
  ASSERT_TRUE(worker.ok());
  ASSERT_TRUE((*worker)->WaitForLine("device=", kTimeout).ok())
      << cluster.Output();
  (*worker)->Signal(SIGTERM);
  absl::StatusOr<int> code = (*worker)->Wait(absl::Seconds(30));
  ASSERT_TRUE(code.ok()) << cluster.Output();
  EXPECT_EQ(*code, 1);
  EXPECT_TRUE(
      absl::StrContains((*worker)->Output(), "petrel-worker: SIGTERM received"))
      << (*worker)->Output();
}

// A second signal ends a daemon at once, even while the first is still
// being handled (here: waiting for a scheduler that cannot answer).
TEST_F(CheckpointTest, SecondSignalEndsADaemonAtOnce) {
  DaemonCluster::Options o;
  o.bin_dir = PETREL_BIN_DIR;
  o.num_servers = 1;
  o.num_workers = 1;
  DaemonCluster cluster(o);
  ASSERT_TRUE(cluster.StartScheduler().ok()) << cluster.Output();
  const std::string config = Config("job.textproto", 1000, "");
  ASSERT_TRUE(cluster.StartNode("petrel-server", {"--config=" + config}).ok());
  absl::StatusOr<Subprocess*> worker = cluster.StartNode(
      "petrel-worker", {"--job=train", "--config=" + config, "--timeout_s=60"});
  ASSERT_TRUE(worker.ok());
  ASSERT_TRUE((*worker)->WaitForLine("device=", kTimeout).ok())
      << cluster.Output();
  (*worker)->Signal(SIGTERM);
  ASSERT_TRUE(
      (*worker)->WaitForLine("SIGTERM received: stopping", kTimeout).ok());
  const absl::Time start = absl::Now();
  (*worker)->Signal(SIGTERM);
  absl::StatusOr<int> code = (*worker)->Wait(absl::Seconds(30));
  ASSERT_TRUE(code.ok()) << cluster.Output();
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));  // not the 5 s fallback
  EXPECT_EQ(*code, 1);
  EXPECT_TRUE(absl::StrContains((*worker)->Output(),
                                "petrel-worker: second SIGTERM: stopping at "
                                "once"))
      << (*worker)->Output();
}

TEST_F(CheckpointTest, SigintToAServerCheckpointsAndStopsTheJob) {
  Job job = Start(
      Config("job.textproto", 1000, absl::StrCat("dir: \"", ckpt_, "\"")));
  ASSERT_TRUE(job.workers[1]->WaitForLine("device=", kTimeout).ok())
      << job.cluster->Output();
  // The workers may start before server 0 has read its join reply; a
  // server interrupted before it joined has nobody to ask and stops alone.
  ASSERT_TRUE(job.cluster->WaitReady(job.servers[0]).ok())
      << job.cluster->Output();
  job.servers[0]->Signal(SIGINT);
  ExpectStopped(job);
  EXPECT_EQ(Manifest(1).reason(), "signal");
  EXPECT_TRUE(
      absl::StrContains(job.workers[0]->Output(), "SIGINT received (server 0)"))
      << job.workers[0]->Output();
}

// Under BSP (max_delay 0) a worker held back by a paused one pauses while
// it waits for its pull: checkpoints every 2 batches never deadlock.
TEST_F(CheckpointTest, BspCheckpointsOftenWithoutDeadlock) {
  Job job = Start(Config("bsp.textproto", 1,
                         absl::StrCat("dir: \"", ckpt_, "\" every_batches: 2"),
                         /*max_delay=*/0));
  const std::string out = RunToEnd(job);
  EXPECT_GT(ValueAfter(out, "final test_logloss", "test_logloss"), 0) << out;
  absl::StatusOr<std::vector<uint64_t>> ids = ListCheckpoints(ckpt_);
  ASSERT_TRUE(ids.ok());
  ASSERT_FALSE(ids->empty());
  // Worker 0 asks every 2 batches; a request made while the previous one is
  // still pending joins it, so how many are taken depends on timing (once 9
  // where 10 were asked for, under load). Several, then "end".
  EXPECT_GE(ids->back(), 4u);
  EXPECT_EQ(Manifest(ids->back()).reason(), "end");
}

TEST_F(CheckpointTest, SigtermToLaunchStopsTheJobAfterACheckpoint) {
  absl::StatusOr<std::unique_ptr<Subprocess>> launch = StartProgram(
      {Bin("petrel-launch"), "--config=" + Config("job.textproto", 1000, ""),
       "--checkpoint_dir=" + ckpt_, "--timeout_s=60"});
  ASSERT_TRUE(launch.ok()) << launch.status();
  ASSERT_TRUE((*launch)->WaitForLine("[worker 1] worker=1", kTimeout).ok())
      << (*launch)->Output();
  const absl::Time start = absl::Now();
  (*launch)->Signal(SIGTERM);
  absl::StatusOr<int> code = (*launch)->Wait(kTimeout);
  ASSERT_TRUE(code.ok()) << (*launch)->Output();
  EXPECT_LT(absl::Now() - start, absl::Seconds(30));
  EXPECT_EQ(*code, 128 + SIGTERM) << (*launch)->Output();
  EXPECT_TRUE(absl::StrContains((*launch)->Output(),
                                "asking the scheduler to stop the job"))
      << (*launch)->Output();
  EXPECT_EQ(Manifest(1).reason(), "signal");
}

// Also: at_epoch_end takes a checkpoint when a new epoch starts.
TEST_F(CheckpointTest, WarmStartLoadsTheRowsAndTrainsFromTheBeginning) {
  Job first =
      Start(Config("first.textproto", 2,
                   absl::StrCat("dir: \"", ckpt_, "\" at_epoch_end: true")));
  const std::string first_out = RunToEnd(first);
  absl::StatusOr<std::vector<uint64_t>> ids = ListCheckpoints(ckpt_);
  ASSERT_TRUE(ids.ok());
  ASSERT_EQ(*ids, (std::vector<uint64_t>{1, 2})) << first.cluster->Output();
  EXPECT_EQ(Manifest(1).reason(), "epoch_end");
  EXPECT_EQ(Manifest(1).workers(0).epoch(), 1);
  EXPECT_EQ(Manifest(2).reason(), "end");
  // One epoch from the first job's weights (fresh optimizer state).
  Job warm =
      Start(Config("warm.textproto", 1,
                   absl::StrCat("warm_start_from: \"", CheckpointPath(ckpt_, 2),
                                "\" warm_start_reset_optimizer: true")));
  const std::string out = RunToEnd(warm);
  EXPECT_EQ(2 * ValueAfter(out, "final test_logloss", "train_examples"),
            ValueAfter(first_out, "final test_logloss", "train_examples"))
      << out;
  EXPECT_FALSE(absl::StrContains(out, "resumes at")) << out;
  EXPECT_TRUE(absl::StrContains(warm.servers[0]->Output(), "loaded its rows"))
      << warm.servers[0]->Output();

  // Tables of another width do not fit: refused before the server joins.
  const std::string wide = dir_ + "/wide.textproto";
  std::ofstream(wide) << "num_servers: 2 num_workers: 2\n"
                         "model { kind: KIND_FM fm_dim: 4 }\n";
  absl::StatusOr<std::unique_ptr<Subprocess>> server =
      StartProgram({Bin("petrel-server"), "--config=" + wide,
                    "--restore_from=" + CheckpointPath(ckpt_, 2),
                    "--scheduler=127.0.0.1:1"});
  ASSERT_TRUE(server.ok());
  absl::StatusOr<int> code = (*server)->Wait(kTimeout);
  ASSERT_TRUE(code.ok());
  EXPECT_EQ(*code, 2) << (*server)->Output();
  EXPECT_TRUE(absl::StrContains((*server)->Output(), "does not fit"))
      << (*server)->Output();
}

TEST_F(CheckpointTest, UnwritableCheckpointDirIsRefusedBeforeTraining) {
  const std::string file = dir_ + "/a_file";
  std::ofstream(file) << "x";
  const std::string config = Config("job.textproto", 1, "");
  for (const char* program : {"petrel-scheduler", "petrel-server"}) {
    std::vector<std::string> argv = {Bin(program), "--config=" + config,
                                     "--checkpoint_dir=" + file + "/ckpt"};
    if (std::string(program) == "petrel-scheduler") {
      argv.push_back("--port=0");
    } else {
      argv.push_back("--scheduler=127.0.0.1:1");
    }
    absl::StatusOr<std::unique_ptr<Subprocess>> p = StartProgram(argv);
    ASSERT_TRUE(p.ok());
    absl::StatusOr<int> code = (*p)->Wait(kTimeout);
    ASSERT_TRUE(code.ok());
    EXPECT_NE(*code, 0) << (*p)->Output();
    EXPECT_TRUE(absl::StrContains((*p)->Output(), file + "/ckpt"))
        << (*p)->Output();
  }
  // The scheduler writes the progress CSV.
  absl::StatusOr<std::unique_ptr<Subprocess>> scheduler =
      StartProgram({Bin("petrel-scheduler"), "--config=" + config,
                    "--progress_csv=" + file + "/progress.csv", "--port=0"});
  ASSERT_TRUE(scheduler.ok());
  absl::StatusOr<int> code = (*scheduler)->Wait(kTimeout);
  ASSERT_TRUE(code.ok());
  EXPECT_EQ(*code, 2) << (*scheduler)->Output();
  EXPECT_TRUE(absl::StrContains((*scheduler)->Output(), file + "/progress.csv"))
      << (*scheduler)->Output();
}

}  // namespace
}  // namespace petrel
