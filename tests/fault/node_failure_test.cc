// Failure detection and fail-fast waits with the real daemons on 127.0.0.1:
// a server killed with SIGKILL under a pushing petrel-worker is declared
// dead from its closed connection (well before the heartbeat timeout), and
// the worker's wait on it returns at once naming the server, not after the
// request timeout (also for a training worker); a server stopped with
// SIGSTOP keeps its connections and is caught by the heartbeats instead.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <signal.h>
#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

#include "tests/harness/daemon_cluster.h"

namespace petrel {
namespace {

// The worker's request timeout and the scheduler's heartbeat timeout are
// far above what the test allows for, so only the fast paths can pass it.
constexpr absl::Duration kAllowed = absl::Seconds(5);
// A kill is seen within --connection_grace_ms (300) plus a tick; this
// leaves room for a loaded machine.
constexpr absl::Duration kFailFast = absl::Seconds(3);

struct Job {
  explicit Job(std::vector<std::string> scheduler_flags)
      : cluster([&] {
          DaemonCluster::Options o;
          o.bin_dir = PETREL_BIN_DIR;
          o.flags = {"--join_timeout_s=30", "--heartbeat_interval_ms=200"};
          o.scheduler_flags = std::move(scheduler_flags);
          return o;
        }()) {}

  // Starts the scheduler, one server and one worker pushing far longer
  // than the test runs; returns once both are ready.
  void Start() {
    ASSERT_TRUE(cluster.StartScheduler().ok()) << cluster.Output();
    absl::StatusOr<Subprocess*> s = cluster.StartNode("petrel-server");
    ASSERT_TRUE(s.ok()) << s.status();
    server = *s;
    absl::StatusOr<Subprocess*> w = cluster.StartNode(
        "petrel-worker",
        {"--rounds=10000000", "--num_keys=100", "--timeout_s=60"});
    ASSERT_TRUE(w.ok()) << w.status();
    worker = *w;
    absl::StatusOr<Announce> a = cluster.WaitReady(server);
    ASSERT_TRUE(a.ok()) << a.status() << cluster.Output();
    server_id = a->id;
    ASSERT_TRUE(cluster.WaitReady(worker).ok()) << cluster.Output();
  }

  DaemonCluster cluster;
  Subprocess* server = nullptr;
  Subprocess* worker = nullptr;
  int server_id = -1;
};

TEST(NodeFailureTest, KilledServerFailsTheWorkersWaitAtOnceNamingIt) {
  Job job({"--heartbeat_timeout_s=60"});
  job.Start();
  if (HasFatalFailure()) return;
  const absl::Time killed = absl::Now();
  job.server->Signal(SIGKILL);
  // The worker's one line, then its exit (which may wait up to ZeroMQ's
  // linger for messages queued to the dead server).
  absl::StatusOr<std::string> line =
      job.worker->WaitForLine("petrel-worker: ", kAllowed);
  const absl::Duration took = absl::Now() - killed;
  ASSERT_TRUE(line.ok()) << line.status() << job.cluster.Output();
  EXPECT_LT(took, kFailFast);
  absl::StatusOr<int> code = job.worker->Wait(kAllowed);
  ASSERT_TRUE(code.ok()) << "the worker still waits " << kAllowed
                         << " after the kill\n"
                         << job.cluster.Output();
  EXPECT_EQ(*code, 1);
  const std::string who =
      absl::StrCat("node ", job.server_id, " (server 0 at 127.0.0.1:");
  const std::string out = job.worker->Output();
  EXPECT_TRUE(absl::StrContains(out, who)) << out;
  EXPECT_TRUE(absl::StrContains(out, "died: connection closed")) << out;
  EXPECT_FALSE(absl::StrContains(out, "no answer within")) << out;
  absl::StatusOr<int> scheduler = job.cluster.scheduler()->Wait(kAllowed);
  ASSERT_TRUE(scheduler.ok()) << job.cluster.Output();
  EXPECT_EQ(*scheduler, 1);
  const std::string sched = job.cluster.scheduler()->Output();
  EXPECT_TRUE(absl::StrContains(sched, who)) << sched;
  EXPECT_TRUE(absl::StrContains(sched, "declared dead")) << sched;
  std::fprintf(stderr, "the worker failed %s after the kill\n",
               absl::FormatDuration(took).c_str());
}

// The same for a training worker (petrel-worker --job=train), which waits
// on pulls, pushes and clocks of its own.
TEST(NodeFailureTest, KilledServerEndsATrainingWorkerAtOnce) {
  const std::string dir =
      absl::StrCat(::testing::TempDir(), "petrel_node_failure_", getpid());
  ASSERT_EQ(std::system(("mkdir -p " + dir).c_str()), 0);
  absl::StatusOr<std::unique_ptr<Subprocess>> gen =
      StartProgram({std::string(PETREL_BIN_DIR) + "/petrel-datagen",
                    "--train_out=" + dir + "/train", "--train_examples=2000",
                    "--test_out=" + dir + "/test", "--test_examples=200"});
  ASSERT_TRUE(gen.ok()) << gen.status();
  ASSERT_EQ(*(*gen)->Wait(absl::Seconds(30)), 0) << (*gen)->Output();
  const std::string config = dir + "/lr.textproto";
  std::ofstream(config) << "model { kind: KIND_LR }\n"
                           "tables { id: 0 dim: 1 }\n"
                           "data { format: FORMAT_LIBSVM }\n"
                           "train { batch_size: 256 epochs: 1000000 }\n";
  DaemonCluster::Options o;
  o.bin_dir = PETREL_BIN_DIR;
  o.flags = {"--join_timeout_s=30", "--config=" + config};
  o.scheduler_flags = {"--heartbeat_timeout_s=60"};
  DaemonCluster cluster(o);
  ASSERT_TRUE(cluster.StartScheduler().ok()) << cluster.Output();
  absl::StatusOr<Subprocess*> server = cluster.StartNode("petrel-server");
  ASSERT_TRUE(server.ok()) << server.status();
  absl::StatusOr<Subprocess*> worker = cluster.StartNode(
      "petrel-worker",
      {"--job=train", "--train=" + dir + "/train", "--test=" + dir + "/test",
       "--timeout_s=60", "--worker_progress"});
  ASSERT_TRUE(worker.ok()) << worker.status();
  absl::StatusOr<Announce> a = cluster.WaitReady(*server);
  ASSERT_TRUE(a.ok()) << cluster.Output();
  // Training, not starting up: its first progress line.
  ASSERT_TRUE(
      (*worker)->WaitForLine("progress worker=0", absl::Seconds(30)).ok())
      << cluster.Output();
  const absl::Time killed = absl::Now();
  (*server)->Signal(SIGKILL);
  absl::StatusOr<std::string> line =
      (*worker)->WaitForLine("petrel-worker: ", kAllowed);
  const absl::Duration took = absl::Now() - killed;
  ASSERT_TRUE(line.ok()) << line.status() << cluster.Output();
  EXPECT_LT(took, kFailFast);
  EXPECT_TRUE(absl::StrContains(
      *line, absl::StrCat("node ", a->id, " (server 0 at 127.0.0.1:")))
      << *line;
  absl::StatusOr<int> code = (*worker)->Wait(kAllowed);
  ASSERT_TRUE(code.ok()) << cluster.Output();
  EXPECT_EQ(*code, 1);
  std::system(("rm -rf " + dir).c_str());
}

TEST(NodeFailureTest, StoppedServerIsCaughtByTheHeartbeats) {
  Job job({"--heartbeat_timeout_s=2"});
  job.Start();
  if (HasFatalFailure()) return;
  const absl::Time stopped = absl::Now();
  job.server->Signal(SIGSTOP);
  absl::StatusOr<int> code = job.worker->Wait(absl::Seconds(2) + kAllowed);
  const absl::Duration took = absl::Now() - stopped;
  job.server->Signal(SIGCONT);
  ASSERT_TRUE(code.ok()) << job.cluster.Output();
  EXPECT_EQ(*code, 1);
  EXPECT_GE(took, absl::Seconds(2));  // not before the heartbeat timeout
  const std::string out = job.worker->Output();
  EXPECT_TRUE(absl::StrContains(
      out, absl::StrCat("node ", job.server_id, " (server 0 at 127.0.0.1:")))
      << out;
  EXPECT_TRUE(absl::StrContains(out, "sent no heartbeat")) << out;
  EXPECT_FALSE(absl::StrContains(out, "no answer within")) << out;
  absl::StatusOr<std::map<std::string, int>> codes =
      job.cluster.WaitAll(absl::Seconds(30));
  ASSERT_TRUE(codes.ok()) << codes.status() << job.cluster.Output();
  EXPECT_EQ(codes->at("scheduler"), 1);
}

}  // namespace
}  // namespace petrel
