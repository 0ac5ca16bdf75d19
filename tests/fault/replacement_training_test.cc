// A replacement server in a training job (docs/failures.md, "Replacement
// servers"), with the real daemons on 127.0.0.1: a factorization machine
// (table 0 FTRL, table 1 Adagrad) trains on 3 servers keeping 2 copies of
// each key range. Server 0 is killed with SIGKILL; a plain petrel-server
// started with the job's flags takes its place, copies its ranges (rows
// with their optimizer state, the admission sketch, the workers' clocks)
// from the live primaries while training goes on, and becomes a replica;
// then server 1 is killed, so that some ranges rely on the copy alone. The
// job ends normally and its test logloss is within 1% (kTolerance) of an
// undisturbed run with the same seed. A second case (R = 3) kills the source of
// the replacement's copy while it copies (stopped first, and killed once the
// replacement asked it, so that the copy is pending): the replacement
// copies again from the next map's primaries. A third adds a 4th server
// (--add_server) mid-training and kills server 0, one of its copy sources,
// once it holds its share.
// One worker: with two, the order in which a
// server applies their pushes alone moves this model's logloss by ~2%
// between undisturbed runs.
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include <signal.h>
#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

#include "tests/fault/fault_waits.h"
#include "tests/harness/daemon_cluster.h"
#include "tests/harness/lr_job.h"

namespace petrel {
namespace {

constexpr absl::Duration kTimeout = absl::Seconds(120);
constexpr int kServers = 3;
constexpr int kWorkers = 1;

// How many times `text` occurs in `s`.
int Count(const std::string& s, const std::string& text) {
  int n = 0;
  for (size_t at = s.find(text); at != std::string::npos;
       at = s.find(text, at + 1)) {
    ++n;
  }
  return n;
}

class ReplacementTrainingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(::testing::TempDir(), "petrel_replacement_training_",
                        getpid());
    const absl::Status s = FreshLrData(PETREL_BIN_DIR, dir_, 60000, kTimeout);
    ASSERT_TRUE(s.ok()) << s;
    config_ = dir_ + "/job.textproto";
    std::string text =
        LrJobTextWithServers(dir_, kServers, kWorkers, /*max_delay=*/0);
    const std::string lr = "model { kind: KIND_LR }";
    text.replace(text.find(lr), lr.size(), "model { kind: KIND_FM fm_dim: 4 }");
    std::ofstream(config_)
        << text
        << "tables { id: 1 dim: 4 initializer { kind: KIND_NORMAL scale: 0.01 "
           "seed: 7 } optimizer { kind: KIND_ADAGRAD learning_rate: 0.01 "
           "initial_accumulator: 1e-6 } }\n"
        << "train { batch_size: 256 epochs: 6 progress_interval_s: 0.2 }\n";
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }

  enum class Mode {
    kUndisturbed,
    // Kills server 0 once training is under way, starts a replacement,
    // and kills server 1 once the replacement is a replica.
    kReplace,
    // Kills server 0, stops server 1 (SIGSTOP), starts a replacement and
    // kills server 1 once the scheduler admitted it: its copy from server
    // 1 fails and it copies again from the next map's primaries (R = 3).
    kSourceDiesDuringTheCopy,
    // Adds a 4th server (petrel-server --add_server) once training is
    // under way, and kills server 0 once it holds its share.
    kAddServer,
  };

  // Runs the job; returns the final test logloss (-1 when the job failed).
  double Run(Mode mode, std::string* output) {
    const bool replace = mode != Mode::kUndisturbed;
    DaemonCluster::Options o;
    o.bin_dir = PETREL_BIN_DIR;
    o.num_servers = kServers;
    o.num_workers = kWorkers;
    o.flags = {"--config=" + config_, "--heartbeat_interval_ms=200",
               "--join_timeout_s=30"};
    o.scheduler_flags = {mode == Mode::kSourceDiesDuringTheCopy
                             ? "--replicas=3"
                             : "--replicas=2",
                         "--heartbeat_timeout_s=60"};
    DaemonCluster cluster(o);
    absl::StatusOr<DaemonCluster::TrainingJob> job = cluster.StartTrainingJob();
    EXPECT_TRUE(job.ok()) << job.status() << cluster.Output();
    if (!job.ok()) return -1;
    std::vector<Subprocess*>& servers = job->servers;
    std::vector<Subprocess*>& workers = job->workers;
    Subprocess* fresh = nullptr;
    if (mode == Mode::kAddServer) {
      EXPECT_TRUE(WaitForOutput(workers[0], "progress worker=0"))
          << cluster.Output();
      absl::StatusOr<Subprocess*> started =
          cluster.StartNode("petrel-server", {"--add_server"});
      EXPECT_TRUE(started.ok()) << started.status();
      if (!started.ok()) return -1;
      fresh = *started;
      EXPECT_TRUE(WaitForOutput(cluster.scheduler(), "was added after"))
          << cluster.Output();
      // Server 0 is one of the primaries it copied its share from (its
      // output may reach us after the scheduler's).
      EXPECT_TRUE(
          WaitForOutput(fresh, "from server 0 (round 1)", absl::Seconds(10)))
          << fresh->Output();
      absl::Status running =
          cluster.StillRunning({workers[0]}, "the kill", "epochs");
      EXPECT_TRUE(running.ok()) << running;
      servers[0]->Signal(SIGKILL);
    }
    if (replace && mode != Mode::kAddServer) {
      Subprocess* sched = cluster.scheduler();
      for (int rank = 0; rank < kWorkers; ++rank) {
        EXPECT_TRUE(WaitForOutput(workers[rank],
                                  absl::StrCat("progress worker=", rank)))
            << cluster.Output();
      }
      servers[0]->Signal(SIGKILL);
      EXPECT_TRUE(WaitForOutput(sched, "fail over to")) << cluster.Output();
      const bool source_dies = mode == Mode::kSourceDiesDuringTheCopy;
      if (source_dies) servers[1]->Signal(SIGSTOP);
      // The replacement: a plain petrel-server with the job's flags.
      absl::StatusOr<Subprocess*> started = cluster.StartNode("petrel-server");
      EXPECT_TRUE(started.ok()) << started.status();
      if (!started.ok()) return -1;
      fresh = *started;
      if (source_dies) {
        // Its copy from the stopped server is pending: kill that server.
        EXPECT_TRUE(WaitForOutput(fresh, "from server 1 (round 1)"))
            << cluster.Output();
        servers[1]->Signal(SIGKILL);
      }
      EXPECT_TRUE(WaitForOutput(sched, "is a replica again"))
          << cluster.Output();
      // Its own line may reach us after the scheduler's.
      EXPECT_TRUE(WaitForOutput(fresh, "caught up", absl::Seconds(10)))
          << fresh->Output();
      if (source_dies) {
        EXPECT_TRUE(
            absl::StrContains(fresh->Output(), "copying every range again"))
            << fresh->Output();
      } else {
        absl::Status running =
            cluster.StillRunning(workers, "the second kill", "epochs");
        EXPECT_TRUE(running.ok()) << running;
        servers[1]->Signal(SIGKILL);
      }
    }
    absl::StatusOr<std::map<std::string, int>> codes =
        cluster.WaitAll(kTimeout);
    EXPECT_TRUE(codes.ok()) << codes.status() << cluster.Output();
    *output = cluster.Output();
    if (!codes.ok()) return -1;
    int failed = 0;
    for (const auto& [name, code] : *codes) failed += code != 0;
    const int kills = mode == Mode::kAddServer ? 1 : replace ? 2 : 0;
    EXPECT_EQ(failed, kills) << *output;  // the killed servers
    if (replace) {
      EXPECT_EQ(Count(cluster.scheduler()->Output(), "fail over to"), kills)
          << *output;
      for (absl::string_view line : absl::StrSplit(fresh->Output(), '\n')) {
        if (absl::StrContains(line, "caught up")) std::cout << line << "\n";
      }
      for (absl::string_view line :
           absl::StrSplit(cluster.scheduler()->Output(), '\n')) {
        if (absl::StrContains(line, "was added after")) {
          std::cout << line << "\n";
        }
      }
    }
    std::string out;
    for (Subprocess* w : workers) out += w->Output();
    return ValueAfter(out, "final test_logloss", "test_logloss");
  }

  std::string dir_;
  std::string config_;
};

// How far from the undisturbed run's test logloss a disturbed run may end:
// the 1%. With one worker and bounded delay 0 the job is
// deterministic and every run ends at the undisturbed value (0.5204, as
// printed, in every run since requests moved by a failover read the
// pushes made before them; docs/failures.md); before, a pull moved by a
// failover could be answered without the push of the clock before it, or
// by a server that does not hold its keys, and runs ended up to 1.2% off.
constexpr double kTolerance = 0.01;

TEST_F(ReplacementTrainingTest, ReplacementCarriesTheNextFailover) {
  std::string plain_out, out;
  const double plain = Run(Mode::kUndisturbed, &plain_out);
  ASSERT_GT(plain, 0) << plain_out;
  const double loss = Run(Mode::kReplace, &out);
  ASSERT_GT(loss, 0) << out;
  EXPECT_LT(std::abs(loss - plain), kTolerance * plain)
      << "undisturbed " << plain << ", with a replacement " << loss;
  std::fprintf(stderr, "test logloss: undisturbed %.5f, replaced %.5f\n", plain,
               loss);
}

TEST_F(ReplacementTrainingTest, SourceDyingDuringTheCopyIsSurvived) {
  std::string plain_out, out;
  const double plain = Run(Mode::kUndisturbed, &plain_out);
  ASSERT_GT(plain, 0) << plain_out;
  const double loss = Run(Mode::kSourceDiesDuringTheCopy, &out);
  ASSERT_GT(loss, 0) << out;
  EXPECT_LT(std::abs(loss - plain), kTolerance * plain)
      << "undisturbed " << plain << ", source died during the copy " << loss;
  std::fprintf(stderr, "test logloss: undisturbed %.5f, source died %.5f\n",
               plain, loss);
}

// Elastic servers (docs/failures.md, "Elastic servers") in a training job:
// a 4th server added mid-training copies its share of the rows with their
// optimizer state, then server 0, whose ranges it shares, is killed.
TEST_F(ReplacementTrainingTest, AddedServerCarriesTheNextFailover) {
  std::string plain_out, out;
  const double plain = Run(Mode::kUndisturbed, &plain_out);
  ASSERT_GT(plain, 0) << plain_out;
  const double loss = Run(Mode::kAddServer, &out);
  ASSERT_GT(loss, 0) << out;
  EXPECT_LT(std::abs(loss - plain), kTolerance * plain)
      << "undisturbed " << plain << ", with a server added " << loss;
  std::fprintf(stderr, "test logloss: undisturbed %.5f, added %.5f\n", plain,
               loss);
}

}  // namespace
}  // namespace petrel
