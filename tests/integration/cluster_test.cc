// A whole job of real daemons on 127.0.0.1: 1 scheduler, 2 servers and 3
// petrel-worker --job=check processes form a cluster, pass a barrier,
// push and pull with exact sums and all exit 0; and a server stopped with
// SIGTERM mid-job ends the whole job as failed, naming the dead node; and a
// busy worker stops at once on SIGINT; and nodes keep reaching the
// scheduler at the address they were given.
#include <map>
#include <set>
#include <string>
#include <vector>

#include <signal.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

#include "tests/harness/daemon_cluster.h"

namespace petrel {
namespace {

constexpr absl::Duration kExitTimeout = absl::Seconds(60);

DaemonCluster::Options JobOptions(int servers, int workers) {
  DaemonCluster::Options o;
  o.bin_dir = PETREL_BIN_DIR;
  o.num_servers = servers;
  o.num_workers = workers;
  o.flags = {"--join_timeout_s=60"};
  return o;
}

TEST(ClusterTest, CheckJobSumsExactlyAndEveryProcessExitsZero) {
  DaemonCluster cluster(JobOptions(2, 3));
  ASSERT_TRUE(cluster.StartScheduler().ok()) << cluster.Output();
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(cluster.StartNode("petrel-server").ok());
  }
  std::vector<Subprocess*> workers;
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<Subprocess*> w = cluster.StartNode(
        "petrel-worker", {"--job=check", "--rounds=20", "--num_keys=1000"});
    ASSERT_TRUE(w.ok()) << w.status();
    workers.push_back(*w);
  }
  absl::StatusOr<std::map<std::string, int>> codes =
      cluster.WaitAll(kExitTimeout);
  ASSERT_TRUE(codes.ok()) << codes.status() << "\n" << cluster.Output();
  ASSERT_EQ(codes->size(), 6u);
  for (const auto& [name, code] : *codes) {
    EXPECT_EQ(code, 0) << name << "\n" << cluster.Output();
  }
  // Every rank passed the exact-sum check (20 rounds x (1+2+3)).
  std::set<int> ranks;
  for (Subprocess* w : workers) {
    absl::StatusOr<std::string> line =
        w->WaitForLine("check rank=", absl::ZeroDuration());
    ASSERT_TRUE(line.ok()) << w->Output();
    EXPECT_TRUE(absl::StrContains(*line, "keys=1000 rounds=20 ok=true"))
        << *line;
    ranks.insert(std::stoi(ParseKeyValues(*line)["rank"]));
  }
  EXPECT_EQ(ranks, (std::set<int>{0, 1, 2}));
  EXPECT_TRUE(absl::StrContains(cluster.scheduler()->Output(),
                                "cluster formed: 2 servers, 3 workers"));
}

// Nodes reach the scheduler at the address they joined it by, not at the
// one it advertises: from another host that one (127.0.0.1 when it binds
// every interface) is the node itself. Here nothing listens at it.
TEST(ClusterTest, NodesKeepTheSchedulerAddressTheyJoinedBy) {
  DaemonCluster::Options o = JobOptions(1, 2);
  o.flags.push_back("--heartbeat_interval_ms=200");
  o.scheduler_flags = {"--heartbeat_timeout_s=3", "--advertise_host=127.0.0.9"};
  DaemonCluster cluster(o);
  ASSERT_TRUE(cluster.StartScheduler().ok()) << cluster.Output();
  ASSERT_TRUE(cluster.StartNode("petrel-server").ok());
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(cluster
                    .StartNode("petrel-worker",
                               {"--job=check", "--rounds=5", "--num_keys=100"})
                    .ok());
  }
  absl::StatusOr<std::map<std::string, int>> codes =
      cluster.WaitAll(kExitTimeout);
  ASSERT_TRUE(codes.ok()) << codes.status() << "\n" << cluster.Output();
  for (const auto& [name, code] : *codes) {
    EXPECT_EQ(code, 0) << name << "\n" << cluster.Output();
  }
}

// Interrupted daemons exit 1 with "SIGTERM received"; the scheduler sees the
// connection close, names the dead node and fails the job; the workers learn
// why from its NODE_DEAD notice or its TERMINATE. One copy of each key
// range (--replicas=1; 2 servers keep 2 by default, and the job would go on,
// tests/fault/replication_test).
TEST(ClusterTest, SigtermedServerFailsTheJobNamingTheDeadNode) {
  DaemonCluster::Options o = JobOptions(2, 2);
  o.flags.push_back("--heartbeat_interval_ms=200");
  o.scheduler_flags = {"--heartbeat_timeout_s=3", "--replicas=1"};
  DaemonCluster cluster(o);
  ASSERT_TRUE(cluster.StartScheduler().ok()) << cluster.Output();
  std::vector<Subprocess*> servers;
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<Subprocess*> s = cluster.StartNode("petrel-server");
    ASSERT_TRUE(s.ok()) << s.status();
    servers.push_back(*s);
  }
  std::vector<Subprocess*> workers;
  for (int i = 0; i < 2; ++i) {
    // 5M rounds keep the workers pushing far longer than the test runs.
    absl::StatusOr<Subprocess*> w = cluster.StartNode(
        "petrel-worker", {"--rounds=5000000", "--num_keys=100"});
    ASSERT_TRUE(w.ok()) << w.status();
    workers.push_back(*w);
  }
  absl::StatusOr<Announce> victim = cluster.WaitReady(servers[0]);
  ASSERT_TRUE(victim.ok()) << victim.status() << cluster.Output();
  ASSERT_TRUE(cluster.WaitReady(servers[1]).ok()) << cluster.Output();
  for (Subprocess* w : workers) {
    ASSERT_TRUE(cluster.WaitReady(w).ok()) << cluster.Output();
  }

  const absl::Time killed = absl::Now();
  servers[0]->Signal(SIGTERM);
  absl::StatusOr<int> server_code = servers[0]->Wait(absl::Seconds(20));
  ASSERT_TRUE(server_code.ok()) << server_code.status();
  EXPECT_EQ(*server_code, 1);
  EXPECT_TRUE(absl::StrContains(servers[0]->Output(), "SIGTERM received"))
      << servers[0]->Output();

  absl::StatusOr<std::map<std::string, int>> codes =
      cluster.WaitAll(kExitTimeout);
  ASSERT_TRUE(codes.ok()) << codes.status() << "\n" << cluster.Output();
  EXPECT_LT(absl::Now() - killed, kExitTimeout);
  const std::string dead = absl::StrCat("node ", victim->id, " (server");
  EXPECT_EQ(codes->at("scheduler"), 1) << cluster.Output();
  std::string scheduler_out = cluster.scheduler()->Output();
  EXPECT_TRUE(absl::StrContains(scheduler_out, "petrel-scheduler: " + dead))
      << scheduler_out;
  // Its process ended, so its connection closed: declared dead at once.
  EXPECT_TRUE(absl::StrContains(scheduler_out, "died: connection closed"));
  for (Subprocess* w : workers) {
    absl::StatusOr<int> code = w->Wait(absl::ZeroDuration());
    ASSERT_TRUE(code.ok());
    EXPECT_EQ(*code, 1) << w->Output();
    // A wait on the dead server fails naming it (or the job's end does).
    EXPECT_TRUE(absl::StrContains(w->Output(), dead)) << w->Output();
  }
  // The surviving server is told the job failed, too.
  EXPECT_EQ(*servers[1]->Wait(absl::ZeroDuration()), 1) << servers[1]->Output();
}

// SIGINT (Ctrl-C) stops a busy worker at once: exit 1 naming the signal.
TEST(ClusterTest, SigintStopsABusyWorkerAtOnce) {
  DaemonCluster::Options o = JobOptions(1, 1);
  o.flags.push_back("--heartbeat_interval_ms=200");
  o.scheduler_flags = {"--heartbeat_timeout_s=3"};
  DaemonCluster cluster(o);
  ASSERT_TRUE(cluster.StartScheduler().ok()) << cluster.Output();
  ASSERT_TRUE(cluster.StartNode("petrel-server").ok());
  absl::StatusOr<Subprocess*> worker = cluster.StartNode(
      "petrel-worker", {"--rounds=10000000", "--num_keys=100"});
  ASSERT_TRUE(worker.ok()) << worker.status();
  ASSERT_TRUE(cluster.WaitReady(*worker).ok()) << cluster.Output();
  const absl::Time start = absl::Now();
  (*worker)->Signal(SIGINT);
  absl::StatusOr<int> code = (*worker)->Wait(absl::Seconds(20));
  ASSERT_TRUE(code.ok()) << code.status() << (*worker)->Output();
  EXPECT_EQ(*code, 1);
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  EXPECT_TRUE(absl::StrContains((*worker)->Output(),
                                "petrel-worker: push: SIGINT received"))
      << (*worker)->Output();
  // The scheduler notices the worker is gone and fails the job.
  absl::StatusOr<std::map<std::string, int>> codes =
      cluster.WaitAll(kExitTimeout);
  ASSERT_TRUE(codes.ok()) << codes.status() << "\n" << cluster.Output();
  EXPECT_EQ(codes->at("scheduler"), 1) << cluster.Output();
}

}  // namespace
}  // namespace petrel
