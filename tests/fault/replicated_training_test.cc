// A training job (FTRL logistic regression, the real daemons on 127.0.0.1)
// with 3 servers keeping 2 copies of each key range (--replicas=2): a
// server killed with SIGKILL mid-training fails over to a replica (the
// backups ran the same optimizer updates on forwarded gradients), the job
// ends normally, and its test logloss is within 1% of an undisturbed run.
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <signal.h>
#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

#include "checkpoint/checkpoint_dir.h"
#include "tests/harness/daemon_cluster.h"
#include "tests/harness/lr_job.h"

namespace petrel {
namespace {

constexpr absl::Duration kTimeout = absl::Seconds(90);
constexpr int kServers = 3;
constexpr int kWorkers = 2;

class ReplicatedTrainingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(::testing::TempDir(), "petrel_replicated_training_",
                        getpid());
    const absl::Status s = FreshLrData(PETREL_BIN_DIR, dir_, 60000, kTimeout);
    ASSERT_TRUE(s.ok()) << s;
    config_ = dir_ + "/job.textproto";
    std::ofstream(config_)
        << LrJobTextWithServers(dir_, kServers, kWorkers, /*max_delay=*/0)
        << "train { batch_size: 256 epochs: 4 progress_interval_s: 0.2 }\n";
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }

  // Runs the job (`flags` added to every daemon's, `replicas` copies);
  // with `kill`, kills server rank 1 once training is under way. Returns
  // the final test logloss (-1 when the job failed).
  double Run(bool kill, std::string* output,
             const std::vector<std::string>& flags = {}, int replicas = 2) {
    DaemonCluster::Options o;
    o.bin_dir = PETREL_BIN_DIR;
    o.num_servers = kServers;
    o.num_workers = kWorkers;
    o.flags = {"--config=" + config_, "--heartbeat_interval_ms=200"};
    o.flags.insert(o.flags.end(), flags.begin(), flags.end());
    o.scheduler_flags = {absl::StrCat("--replicas=", replicas),
                         "--heartbeat_timeout_s=60"};
    DaemonCluster cluster(o);
    absl::StatusOr<DaemonCluster::TrainingJob> job = cluster.StartTrainingJob();
    EXPECT_TRUE(job.ok()) << job.status() << cluster.Output();
    if (!job.ok()) return -1;
    std::vector<Subprocess*>& servers = job->servers;
    std::vector<Subprocess*>& workers = job->workers;
    if (kill) {
      // Training, not starting up: a progress line of each worker.
      for (int rank = 0; rank < kWorkers; ++rank) {
        EXPECT_TRUE(
            workers[rank]
                ->WaitForLine(absl::StrCat("progress worker=", rank), kTimeout)
                .ok())
            << cluster.Output();
      }
      servers[1]->Signal(SIGKILL);
    }
    absl::StatusOr<std::map<std::string, int>> codes =
        cluster.WaitAll(kTimeout);
    EXPECT_TRUE(codes.ok()) << codes.status() << cluster.Output();
    *output = cluster.Output();
    if (!codes.ok()) return -1;
    int failed = 0;
    for (const auto& [name, code] : *codes) failed += code != 0;
    EXPECT_EQ(failed, kill ? 1 : 0) << *output;  // the killed server
    std::string out;
    for (Subprocess* w : workers) out += w->Output();
    return ValueAfter(out, "final test_logloss", "test_logloss");
  }

  std::string dir_;
  std::string config_;
};

TEST_F(ReplicatedTrainingTest, KilledServerDoesNotChangeTheModel) {
  std::string plain_out, out;
  const double plain = Run(false, &plain_out);
  ASSERT_GT(plain, 0) << plain_out;
  const double loss = Run(true, &out);
  ASSERT_GT(loss, 0) << out;
  EXPECT_TRUE(absl::StrContains(out, "fail over to")) << out;
  EXPECT_LT(std::abs(loss - plain), 0.01 * plain)
      << "undisturbed " << plain << ", with a server killed " << loss;
  std::fprintf(stderr, "test logloss: undisturbed %.5f, server killed %.5f\n",
               plain, loss);
}

// A checkpoint taken after a failover (the job's final one, with server 1
// dead): the scheduler asks only the live servers, its manifest records
// the map after the failover, and the successor saves the dead server's
// ranges from its copies. Restored into 3 servers with 2 copies and with
// one, the model is the one the job ended with: the restored jobs (their
// workers finished) evaluate to the same test logloss.
TEST_F(ReplicatedTrainingTest, CheckpointAfterAFailoverRestoresTheModel) {
  const std::string ckpt = dir_ + "/ckpt";
  std::string out;
  const double loss = Run(true, &out, {"--checkpoint_dir=" + ckpt});
  ASSERT_GT(loss, 0) << out;
  EXPECT_TRUE(absl::StrContains(out, "fail over to")) << out;
  EXPECT_TRUE(absl::StrContains(out, "(end) complete")) << out;
  absl::StatusOr<std::vector<uint64_t>> ids = ListCheckpoints(ckpt);
  ASSERT_TRUE(ids.ok() && !ids->empty())
      << ids.status() << ReadManifest(CheckpointPath(ckpt, 1)).status();
  const std::string latest = CheckpointPath(ckpt, ids->back());
  for (int replicas : {2, 1}) {
    std::string restored_out;
    const double restored =
        Run(false, &restored_out,
            {"--restore_from=" + latest,
             absl::StrCat("--checkpoint_dir=", dir_, "/ckpt_r", replicas)},
            replicas);
    EXPECT_NEAR(restored, loss, 1e-4)
        << "restored with " << replicas << " replica(s)\n"
        << restored_out;
    std::fprintf(stderr,
                 "test logloss: at the end %.5f, restored (R=%d) %.5f\n", loss,
                 replicas, restored);
  }
}

}  // namespace
}  // namespace petrel
