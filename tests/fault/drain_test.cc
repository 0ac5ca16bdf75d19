// Draining a server (docs/failures.md, "Elastic servers"), with the real
// daemons on 127.0.0.1: petrel-worker check jobs push to 5 servers with
// --replicas=2 and 16 requests in flight each; `petrelctl drain-server`
// removes three of them, one after the other, while they push. The servers
// that gain copies in the map without the drained one copy them from their
// primaries, the scheduler publishes that map (version + 1) to the servers,
// then to the workers, waits until every node routes by it and has no
// request left at the drained server, then stops the drained server (exit
// 0). The check jobs' exact sums prove that no push was lost or applied
// twice; every live server's petrel_server_pushes_ahead_of_map_total stays
// 0 (no push sliced by the new map reached a server still routing by the
// old one: that lost acknowledged pushes before the map went to the
// servers first). A range's new primary in one drain is drained in the
// next, so a push its copies missed would show in the sums. petrelctl's
// refusals (a worker, an unknown id, a server drained already, too few
// servers left) are checked on the same job.
#include <algorithm>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

#include "tests/fault/fault_waits.h"
#include "tests/harness/daemon_cluster.h"

namespace petrel {
namespace {

constexpr absl::Duration kJobTimeout = absl::Seconds(120);

// Runs petrelctl with `args` to its end (it has its own --timeout_s).
ProgramRun Petrelctl(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {std::string(PETREL_BIN_DIR) + "/petrelctl"};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunToEnd(std::move(argv), absl::Seconds(30));
}

struct Job {
  std::unique_ptr<DaemonCluster> cluster;
  std::vector<Subprocess*> servers;
  std::vector<Announce> ready;
  std::vector<Subprocess*> workers;
  std::vector<Announce> worker_ready;
};

void StartJob(int num_servers, int rounds, int inflight, Job* job) {
  job->cluster =
      std::make_unique<DaemonCluster>(ReplicatedJobOptions(num_servers, 2, 60));
  DaemonCluster& cluster = *job->cluster;
  ASSERT_TRUE(cluster.StartScheduler().ok()) << cluster.Output();
  for (int i = 0; i < num_servers; ++i) {
    absl::StatusOr<Subprocess*> s = cluster.StartNode("petrel-server");
    ASSERT_TRUE(s.ok()) << s.status();
    job->servers.push_back(*s);
  }
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<Subprocess*> w = cluster.StartNode(
        "petrel-worker",
        {absl::StrCat("--rounds=", rounds), "--num_keys=300",
         absl::StrCat("--inflight=", inflight), "--timeout_s=60"});
    ASSERT_TRUE(w.ok()) << w.status();
    job->workers.push_back(*w);
  }
  for (Subprocess* s : job->servers) {
    absl::StatusOr<Announce> a = cluster.WaitReady(s);
    ASSERT_TRUE(a.ok()) << a.status() << cluster.Output();
    job->ready.push_back(*a);
  }
  for (Subprocess* w : job->workers) {
    absl::StatusOr<Announce> a = cluster.WaitReady(w);
    ASSERT_TRUE(a.ok()) << a.status() << cluster.Output();
    job->worker_ready.push_back(*a);
  }
}

// The live servers' count of pushes sliced by a newer map than theirs.
void ExpectNoPushAheadOfMap(const Announce& server) {
  absl::StatusOr<std::string> metrics =
      HttpGet(server.metrics_port, "/metrics");
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  EXPECT_TRUE(absl::StrContains(*metrics,
                                "petrel_server_pushes_ahead_of_map_total 0\n"))
      << "server " << server.rank << ":\n"
      << *metrics;
}

TEST(DrainTest, DrainedServerLeavesWhileWorkersPush) {
  Job job;
  StartJob(5, 40000, 16, &job);
  if (HasFatalFailure()) return;
  DaemonCluster& cluster = *job.cluster;
  Subprocess* sched = cluster.scheduler();
  const std::string at = "--scheduler=" + cluster.scheduler_address();
  WaitForPushes(job.ready[1], 2000);
  if (HasFatalFailure()) return;

  // Refusals: a worker, an unknown id, no --node.
  ProgramRun worker = Petrelctl(
      {at, "drain-server", absl::StrCat("--node=", job.worker_ready[0].id)});
  EXPECT_EQ(worker.code, 1) << worker.out;
  EXPECT_TRUE(absl::StrContains(worker.out, "is a worker, not a server"))
      << worker.out;
  ProgramRun unknown = Petrelctl({at, "drain-server", "--node=999"});
  EXPECT_EQ(unknown.code, 1) << unknown.out;
  EXPECT_TRUE(absl::StrContains(unknown.out, "node 999 is not in the job"))
      << unknown.out;
  EXPECT_EQ(Petrelctl({at, "drain-server"}).code, 2);

  // Drains servers 1, 2 and 3 (each once the one before stopped); a
  // fourth drain would leave fewer servers than replicas.
  std::vector<int> live = {0, 1, 2, 3, 4};
  for (int i : {1, 2, 3}) {
    const std::string node = absl::StrCat("--node=", job.ready[i].id);
    ProgramRun drain = Petrelctl({at, "drain-server", node});
    ASSERT_EQ(drain.code, 0) << drain.out << cluster.Output();
    EXPECT_TRUE(absl::StrContains(drain.out, "drain of node")) << drain.out;
    absl::StatusOr<int> code = job.servers[i]->Wait(kJobTimeout);
    ASSERT_TRUE(code.ok()) << cluster.Output();
    EXPECT_EQ(*code, 0) << job.servers[i]->Output();
    EXPECT_TRUE(absl::StrContains(
        job.servers[i]->Output(),
        absl::StrCat("server ", job.ready[i].rank, " was drained")))
        << job.servers[i]->Output();
    ProgramRun again = Petrelctl({at, "drain-server", node});
    EXPECT_EQ(again.code, 1) << again.out;
    EXPECT_TRUE(absl::StrContains(again.out, "was drained already"))
        << again.out;
    live.erase(std::find(live.begin(), live.end(), i));
    for (int s : live) {
      ExpectNoPushAheadOfMap(job.ready[s]);
      if (HasFatalFailure()) return;
    }
  }
  ProgramRun fourth =
      Petrelctl({at, "drain-server", absl::StrCat("--node=", job.ready[4].id)});
  EXPECT_EQ(fourth.code, 1) << fourth.out;
  EXPECT_TRUE(absl::StrContains(fourth.out, "would leave 1 live server(s)"))
      << fourth.out;
  absl::Status running =
      cluster.StillRunning(job.workers, "the drains", "--rounds");
  EXPECT_TRUE(running.ok()) << running;
  absl::StatusOr<std::string> metrics = cluster.SchedulerMetrics();
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  EXPECT_TRUE(
      absl::StrContains(*metrics, "petrel_scheduler_servers_drained_total 3"))
      << *metrics;
  EXPECT_TRUE(absl::StrContains(*metrics, "petrel_key_range_map_version 4"))
      << *metrics;
  absl::StatusOr<int> code;
  // The drained servers are gone; the others answer the rest of the job.
  WaitForPushes(job.ready[0], 20000);
  if (HasFatalFailure()) return;
  for (Subprocess* w : job.workers) {
    code = w->Wait(kJobTimeout);
    ASSERT_TRUE(code.ok()) << cluster.Output();
    EXPECT_EQ(*code, 0) << cluster.Output();
    EXPECT_TRUE(absl::StrContains(w->Output(), "ok=true")) << w->Output();
  }
  code = sched->Wait(kJobTimeout);
  ASSERT_TRUE(code.ok()) << cluster.Output();
  EXPECT_EQ(*code, 0) << cluster.Output();
  // The time to drain, for docs/failures.md.
  for (const std::string& out :
       {sched->Output(), job.servers[0]->Output(), job.servers[2]->Output(),
        job.servers[4]->Output()}) {
    for (absl::string_view line : absl::StrSplit(out, '\n')) {
      if (absl::StrContains(line, "drain")) std::cout << line << "\n";
    }
  }
}

// A server added after a drain (docs/failures.md, "Elastic servers"): the
// drained rank stays a dead slot of the ring, in no key range's chain, so
// `petrel-server --add_server` takes the next rank and the fair share of
// the live servers while the workers push; the check jobs' exact sums
// prove that neither the drain nor the add lost or doubled a push.
TEST(DrainTest, ServerAddedAfterADrain) {
  Job job;
  StartJob(3, 40000, 16, &job);
  if (HasFatalFailure()) return;
  DaemonCluster& cluster = *job.cluster;
  Subprocess* sched = cluster.scheduler();
  const std::string at = "--scheduler=" + cluster.scheduler_address();
  WaitForPushes(job.ready[1], 2000);
  if (HasFatalFailure()) return;
  ProgramRun drain =
      Petrelctl({at, "drain-server", absl::StrCat("--node=", job.ready[1].id)});
  ASSERT_EQ(drain.code, 0) << drain.out << cluster.Output();
  absl::StatusOr<int> code = job.servers[1]->Wait(kJobTimeout);
  ASSERT_TRUE(code.ok()) << cluster.Output();
  EXPECT_EQ(*code, 0) << job.servers[1]->Output();
  // Exact sums need both servers' rows: draining again is refused.
  ProgramRun again =
      Petrelctl({at, "drain-server", absl::StrCat("--node=", job.ready[0].id)});
  EXPECT_EQ(again.code, 1) << again.out;

  absl::StatusOr<Subprocess*> added =
      cluster.StartNode("petrel-server", {"--add_server"});
  ASSERT_TRUE(added.ok()) << added.status();
  absl::StatusOr<Announce> ready = cluster.WaitReady(*added);
  ASSERT_TRUE(ready.ok()) << ready.status() << cluster.Output();
  EXPECT_EQ(ready->rank, 3) << (*added)->Output();
  ASSERT_TRUE(WaitForOutput(sched, "was added after")) << cluster.Output();
  // It leads its share: it answers pushes while the workers still run.
  WaitForPushes(*ready, 2000);
  if (HasFatalFailure()) return;
  absl::Status running =
      cluster.StillRunning(job.workers, "the add", "--rounds");
  EXPECT_TRUE(running.ok()) << running;
  absl::StatusOr<std::string> metrics = cluster.SchedulerMetrics();
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  EXPECT_TRUE(
      absl::StrContains(*metrics, "petrel_scheduler_servers_drained_total 1"))
      << *metrics;
  EXPECT_TRUE(
      absl::StrContains(*metrics, "petrel_scheduler_servers_added_total 1"))
      << *metrics;
  EXPECT_TRUE(absl::StrContains(*metrics, "petrel_key_range_map_version 3"))
      << *metrics;
  for (Subprocess* w : job.workers) {
    code = w->Wait(kJobTimeout);
    ASSERT_TRUE(code.ok()) << cluster.Output();
    EXPECT_EQ(*code, 0) << cluster.Output();
    EXPECT_TRUE(absl::StrContains(w->Output(), "ok=true")) << w->Output();
  }
  code = sched->Wait(kJobTimeout);
  ASSERT_TRUE(code.ok()) << cluster.Output();
  EXPECT_EQ(*code, 0) << cluster.Output();
  code = (*added)->Wait(kJobTimeout);
  ASSERT_TRUE(code.ok()) << cluster.Output();
  EXPECT_EQ(*code, 0) << (*added)->Output();
  for (const std::string& out : {sched->Output(), (*added)->Output()}) {
    for (absl::string_view line : absl::StrSplit(out, '\n')) {
      if (absl::StrContains(line, "drain") ||
          absl::StrContains(line, "added")) {
        std::cout << line << "\n";
      }
    }
  }
}

TEST(DrainTest, RefusesToDrainBelowTheReplicationFactor) {
  Job job;
  StartJob(2, 20000, 8, &job);
  if (HasFatalFailure()) return;
  DaemonCluster& cluster = *job.cluster;
  const std::string at = "--scheduler=" + cluster.scheduler_address();
  ProgramRun drain =
      Petrelctl({at, "drain-server", absl::StrCat("--node=", job.ready[0].id)});
  EXPECT_EQ(drain.code, 1) << drain.out;
  EXPECT_TRUE(absl::StrContains(drain.out, "would leave 1 live server(s)"))
      << drain.out;
  for (Subprocess* w : job.workers) {
    absl::StatusOr<int> code = w->Wait(kJobTimeout);
    ASSERT_TRUE(code.ok()) << cluster.Output();
    EXPECT_EQ(*code, 0) << cluster.Output();
  }
  absl::StatusOr<int> code = cluster.scheduler()->Wait(kJobTimeout);
  ASSERT_TRUE(code.ok()) << cluster.Output();
  EXPECT_EQ(*code, 0) << cluster.Output();
}

}  // namespace
}  // namespace petrel
