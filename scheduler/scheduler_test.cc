#include "scheduler/scheduler.h"

#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "base/testing/wait_until.h"
#include "cluster/testing/van_cluster.h"
#include "van/loopback_van.h"

namespace petrel {
namespace {

using ::testing::HasSubstr;

// A scheduler and nodes over LoopbackVan whose joins the test starts one by
// one, so that the join order is known.
class Harness {
 public:
  struct Node {
    std::unique_ptr<MetricsRegistry> metrics;
    std::unique_ptr<Postoffice> po;
    std::thread starter;
    absl::Status start_status;
  };

  Harness(int servers, int workers, SchedulerOptions options = {},
          std::function<bool(int)> worker_lost_hook = nullptr)
      : servers_(servers), workers_(workers) {
    scheduler_po_ = std::make_unique<Postoffice>(
        TestNodeOptions(pb::ROLE_SCHEDULER, servers, workers, 0),
        std::make_unique<LoopbackVan>(&network_, TestVanOptions(), &metrics_),
        &metrics_);
    scheduler_ = std::make_unique<Scheduler>(scheduler_po_.get(), options);
    if (worker_lost_hook) {
      scheduler_->set_worker_lost_hook(std::move(worker_lost_hook));
    }
    EXPECT_TRUE(scheduler_po_->Start().ok());
    run_thread_ = std::thread([this] {
      run_status_ = scheduler_->Run();
      run_done_.Notify();
    });
  }

  ~Harness() {
    scheduler_->Interrupt("test ended");
    run_thread_.join();
    for (auto& n : nodes_) {
      if (n->starter.joinable()) n->starter.join();
    }
    for (auto& n : nodes_) n->po->Stop();
    scheduler_po_->Stop();
  }

  Node* AddNode(pb::Role role, int requested_rank = -1,
                const std::string& token = "",
                std::function<void(PostofficeOptions&)> adjust = nullptr,
                absl::Duration join_timeout = absl::Seconds(10)) {
    auto node = std::make_unique<Node>();
    node->metrics = std::make_unique<MetricsRegistry>();
    PostofficeOptions po =
        TestNodeOptions(role, servers_, workers_, scheduler_po_->port());
    po.requested_rank = requested_rank;
    po.auth_token = token;
    po.join_timeout = join_timeout;
    po.heartbeat_interval = absl::Milliseconds(20);
    if (adjust) adjust(po);
    node->po = std::make_unique<Postoffice>(
        po,
        std::make_unique<LoopbackVan>(&network_, TestVanOptions(),
                                      node->metrics.get()),
        node->metrics.get());
    nodes_.push_back(std::move(node));
    return nodes_.back().get();
  }

  // Starts `node` in the background and returns once the scheduler has
  // received its join request, so later joins come after it.
  void StartAsync(Node* node) {
    int64_t before = Received();
    node->starter =
        std::thread([node] { node->start_status = node->po->Start(); });
    EXPECT_TRUE(WaitUntil([&] { return Received() > before; }));
  }
  // Joins the background start of `node`.
  absl::Status StartResult(Node* node) {
    node->starter.join();
    return node->start_status;
  }
  // Starts nodes of `role` in this order of requested ranks.
  std::vector<Node*> Join(pb::Role role, const std::vector<int>& ranks) {
    std::vector<Node*> out;
    for (int r : ranks) {
      out.push_back(AddNode(role, r));
      StartAsync(out.back());
    }
    return out;
  }

  absl::Status WaitRun(absl::Duration timeout = absl::Seconds(10)) {
    if (!run_done_.WaitForNotificationWithTimeout(timeout)) {
      return absl::DeadlineExceededError("Scheduler::Run did not return");
    }
    return run_status_;
  }

  Scheduler* scheduler() { return scheduler_.get(); }
  Postoffice* scheduler_po() { return scheduler_po_.get(); }
  const MetricsRegistry& scheduler_metrics() const { return metrics_; }

 private:
  int64_t Received() {
    return static_cast<int64_t>(
        metrics_.Value("petrel_van_messages_received_total").value_or(0));
  }

  const int servers_;
  const int workers_;
  LoopbackNetwork network_;
  MetricsRegistry metrics_;
  std::unique_ptr<Postoffice> scheduler_po_;
  std::unique_ptr<Scheduler> scheduler_;
  std::thread run_thread_;
  absl::Notification run_done_;
  absl::Status run_status_;
  std::vector<std::unique_ptr<Node>> nodes_;
};

// A scheduler taking over a running job (--recover) admits only that job's
// nodes, rejoining with their ids; a new node is told why it is refused.
TEST(SchedulerTest, RecoveringSchedulerRefusesNewNodes) {
  SchedulerOptions options;
  options.recover = true;
  Harness h(1, 1, options);
  Harness::Node* n = h.AddNode(pb::ROLE_SERVER);
  h.StartAsync(n);
  absl::Status s = h.StartResult(n);
  EXPECT_TRUE(absl::IsPermissionDenied(s)) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("--recover"));
}

TEST(SchedulerTest, HonoursRequestedRanksWhateverTheJoinOrder) {
  Harness h(3, 2);
  auto servers = h.Join(pb::ROLE_SERVER, {2, 0, 1});
  auto workers = h.Join(pb::ROLE_WORKER, {1, 0});
  for (auto* n : servers) ASSERT_TRUE(h.StartResult(n).ok());
  for (auto* n : workers) ASSERT_TRUE(h.StartResult(n).ok());
  EXPECT_EQ(servers[0]->po->my_rank(), 2);
  EXPECT_EQ(servers[0]->po->my_id(), ServerRankToId(2));
  EXPECT_EQ(servers[1]->po->my_rank(), 0);
  EXPECT_EQ(servers[2]->po->my_rank(), 1);
  EXPECT_EQ(workers[0]->po->my_rank(), 1);
  EXPECT_EQ(workers[0]->po->my_id(), WorkerRankToId(1));
  EXPECT_EQ(workers[1]->po->my_rank(), 0);
  // Every node got the same table: 1 scheduler + 5 nodes.
  EXPECT_EQ(servers[1]->po->nodes().size(), 6u);
  EXPECT_EQ(h.scheduler()->nodes().size(), 6u);
}

TEST(SchedulerTest, JoinOrderDecidesRanksNotRequested) {
  Harness h(3, 1);
  // The last server asks for rank 0; the others take 1 and 2 in join order.
  auto servers = h.Join(pb::ROLE_SERVER, {-1, -1, 0});
  auto workers = h.Join(pb::ROLE_WORKER, {-1});
  for (auto* n : servers) ASSERT_TRUE(h.StartResult(n).ok());
  ASSERT_TRUE(h.StartResult(workers[0]).ok());
  EXPECT_EQ(servers[0]->po->my_rank(), 1);
  EXPECT_EQ(servers[1]->po->my_rank(), 2);
  EXPECT_EQ(servers[2]->po->my_rank(), 0);
  EXPECT_EQ(workers[0]->po->my_id(), WorkerRankToId(0));
}

TEST(SchedulerTest, JoinOrderAloneGivesAscendingRanks) {
  Harness h(3, 1);
  auto servers = h.Join(pb::ROLE_SERVER, {-1, -1, -1});
  auto workers = h.Join(pb::ROLE_WORKER, {-1});
  for (auto* n : servers) ASSERT_TRUE(h.StartResult(n).ok());
  ASSERT_TRUE(h.StartResult(workers[0]).ok());
  for (int i = 0; i < 3; ++i) EXPECT_EQ(servers[i]->po->my_rank(), i);
}

TEST(SchedulerTest, RejectsServerBeyondTheExpectedCount) {
  Harness h(2, 1);
  auto servers = h.Join(pb::ROLE_SERVER, {-1, -1});
  Harness::Node* extra = h.AddNode(pb::ROLE_SERVER);
  absl::Status s = extra->po->Start();
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(s.message(), HasSubstr("expects 2 servers"));
  // The job still forms with the expected nodes.
  auto workers = h.Join(pb::ROLE_WORKER, {-1});
  for (auto* n : servers) EXPECT_TRUE(h.StartResult(n).ok());
  EXPECT_TRUE(h.StartResult(workers[0]).ok());
  // Once formed, nobody else may join.
  Harness::Node* late = h.AddNode(pb::ROLE_WORKER);
  s = late->po->Start();
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(s.message(), HasSubstr("already complete"));
}

TEST(SchedulerTest, AddsOneServerAtATimeToAReplicatedJob) {
  SchedulerOptions options;
  options.replicas = 2;
  Harness h(2, 1, options);
  auto servers = h.Join(pb::ROLE_SERVER, {-1, -1});
  auto workers = h.Join(pb::ROLE_WORKER, {-1});
  for (auto* n : servers) ASSERT_TRUE(h.StartResult(n).ok());
  ASSERT_TRUE(h.StartResult(workers[0]).ok());
  auto add = [](PostofficeOptions& po) { po.add_server = true; };
  Harness::Node* added = h.AddNode(pb::ROLE_SERVER, -1, "", add);
  ASSERT_TRUE(added->po->Start().ok());
  // Server 2 with its share of the map to copy; every node knows it.
  EXPECT_EQ(added->po->my_rank(), 2);
  EXPECT_TRUE(added->po->joined_as_added());
  EXPECT_EQ(added->po->num_servers(), 3);
  const ReplicaMap map = added->po->replica_map();
  EXPECT_EQ(map.version(), 2u);
  EXPECT_EQ(map.CopiesHeldBy(2), 2 * 64 / 3);
  // One at a time: it has not caught up.
  Harness::Node* second = h.AddNode(pb::ROLE_SERVER, -1, "", add);
  absl::Status s = second->po->Start();
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(s.message(), HasSubstr("is being added"));
}

TEST(SchedulerTest, RefusesToAddAServerToAnUnreplicatedJob) {
  SchedulerOptions options;
  options.replicas = 1;
  Harness h(2, 1, options);
  auto servers = h.Join(pb::ROLE_SERVER, {-1, -1});
  auto workers = h.Join(pb::ROLE_WORKER, {-1});
  for (auto* n : servers) ASSERT_TRUE(h.StartResult(n).ok());
  ASSERT_TRUE(h.StartResult(workers[0]).ok());
  Harness::Node* added =
      h.AddNode(pb::ROLE_SERVER, -1, "",
                [](PostofficeOptions& po) { po.add_server = true; });
  absl::Status s = added->po->Start();
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(s.message(), HasSubstr("not replicated"));
}

TEST(SchedulerTest, ReplicatedJobRefusesAServerWithNoDeadOneToReplace) {
  SchedulerOptions options;
  options.replicas = 2;
  Harness h(2, 1, options);
  auto servers = h.Join(pb::ROLE_SERVER, {-1, -1});
  auto workers = h.Join(pb::ROLE_WORKER, {-1});
  for (auto* n : servers) ASSERT_TRUE(h.StartResult(n).ok());
  ASSERT_TRUE(h.StartResult(workers[0]).ok());
  // Every server is alive: a server joining the running job has nothing
  // to replace; a worker may never join it.
  Harness::Node* spare = h.AddNode(pb::ROLE_SERVER);
  absl::Status s = spare->po->Start();
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(s.message(), HasSubstr("no dead server to replace"));
  Harness::Node* late = h.AddNode(pb::ROLE_WORKER);
  s = late->po->Start();
  EXPECT_THAT(s.message(), HasSubstr("only a server may join"));
}

TEST(SchedulerTest, RejectsDuplicateRequestedRank) {
  Harness h(2, 1);
  h.Join(pb::ROLE_SERVER, {1});
  Harness::Node* dup = h.AddNode(pb::ROLE_SERVER, 1);
  absl::Status s = dup->po->Start();
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(s.message(), HasSubstr("rank 1 is already taken"));
  Harness::Node* too_high = h.AddNode(pb::ROLE_SERVER, 2);
  s = too_high->po->Start();
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(s.message(), HasSubstr("rank 2 requested"));
}

TEST(SchedulerTest, RefusesANodeGivenAnotherClusterSizeNamingBothValues) {
  Harness h(2, 1);
  Harness::Node* wrong =
      h.AddNode(pb::ROLE_SERVER, -1, "", [](PostofficeOptions& po) {
        po.num_servers = 3;
        po.num_servers_given = true;
      });
  absl::Status s = wrong->po->Start();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(),
              HasSubstr("this node has num_servers=3 but the scheduler "
                        "num_servers=2"));
  // The same counts given explicitly join.
  auto agree = [](PostofficeOptions& po) {
    po.num_servers_given = true;
    po.num_workers_given = true;
  };
  std::vector<Harness::Node*> nodes = {
      h.AddNode(pb::ROLE_SERVER, -1, "", agree),
      h.AddNode(pb::ROLE_SERVER, -1, "", agree),
      h.AddNode(pb::ROLE_WORKER, -1, "", agree)};
  for (auto* n : nodes) h.StartAsync(n);
  for (auto* n : nodes) EXPECT_TRUE(h.StartResult(n).ok());
}

TEST(SchedulerTest, RejectsWrongAuthToken) {
  SchedulerOptions options;
  options.auth_token = "secret";
  Harness h(1, 1, options);
  // A wrong token gets no answer at all (an answer would show the sender
  // the scheduler's transport identity): the node times out, and its
  // message names the token.
  Harness::Node* intruder =
      h.AddNode(pb::ROLE_SERVER, -1, "guess", nullptr, absl::Milliseconds(500));
  absl::Status s = intruder->po->Start();
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(s.message(), HasSubstr("--auth_token"));
  Harness::Node* none =
      h.AddNode(pb::ROLE_WORKER, -1, "", nullptr, absl::Milliseconds(500));
  EXPECT_EQ(none->po->Start().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(h.scheduler_metrics()
                .Value("petrel_van_messages_rejected_total",
                       {{"reason", "unauthenticated"}})
                .value_or(0),
            2);
  // Nothing reached them: the scheduler never connected to them.
  for (Harness::Node* refused : {intruder, none}) {
    EXPECT_EQ(refused->metrics->Value("petrel_van_messages_received_total")
                  .value_or(-1),
              0);
  }
  // The right token joins.
  Harness::Node* server = h.AddNode(pb::ROLE_SERVER, -1, "secret");
  h.StartAsync(server);
  Harness::Node* worker = h.AddNode(pb::ROLE_WORKER, -1, "secret");
  EXPECT_TRUE(worker->po->Start().ok());
  EXPECT_TRUE(h.StartResult(server).ok());
}

// A formed cluster of `servers` and `workers`.
struct Formed {
  Formed(int s, int w, SchedulerOptions options = {},
         std::function<bool(int)> worker_lost_hook = nullptr)
      : h(s, w, options, std::move(worker_lost_hook)) {
    servers = h.Join(pb::ROLE_SERVER, std::vector<int>(s, -1));
    workers = h.Join(pb::ROLE_WORKER, std::vector<int>(w, -1));
    for (auto* n : servers) EXPECT_TRUE(h.StartResult(n).ok());
    for (auto* n : workers) EXPECT_TRUE(h.StartResult(n).ok());
  }
  Harness h;
  std::vector<Harness::Node*> servers;
  std::vector<Harness::Node*> workers;
};

// Runs Barrier(group) on every postoffice in parallel.
std::vector<absl::Status> BarrierAll(
    const std::vector<Postoffice*>& pos, int group,
    absl::Duration timeout = absl::Seconds(10)) {
  std::vector<absl::Status> results(pos.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < pos.size(); ++i) {
    threads.emplace_back(
        [&, i] { results[i] = pos[i]->Barrier(group, timeout); });
  }
  for (auto& t : threads) t.join();
  return results;
}

TEST(SchedulerTest, WorkerGroupBarrierReleasesAllWorkers) {
  Formed f(1, 3);
  std::vector<Postoffice*> pos;
  for (auto* n : f.workers) pos.push_back(n->po.get());
  for (int round = 0; round < 3; ++round) {
    for (const absl::Status& s : BarrierAll(pos, kWorkerGroup)) {
      EXPECT_TRUE(s.ok()) << s;
    }
  }
}

TEST(SchedulerTest, AllGroupBarrierIncludesTheScheduler) {
  Formed f(2, 2);
  std::vector<Postoffice*> pos = {f.h.scheduler_po()};
  for (auto* n : f.servers) pos.push_back(n->po.get());
  for (auto* n : f.workers) pos.push_back(n->po.get());
  for (const absl::Status& s : BarrierAll(pos, kAllGroup)) {
    EXPECT_TRUE(s.ok()) << s;
  }
}

TEST(SchedulerTest, BarrierWithMissingMemberTimesOut) {
  Formed f(1, 2);
  absl::Status s =
      f.workers[0]->po->Barrier(kWorkerGroup, absl::Milliseconds(200));
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(s.message(), HasSubstr("group 4"));
  // Without the scheduler, the all-group barrier cannot pass either.
  std::vector<Postoffice*> pos;
  for (auto* n : f.servers) pos.push_back(n->po.get());
  for (auto* n : f.workers) pos.push_back(n->po.get());
  for (const absl::Status& st :
       BarrierAll(pos, kAllGroup, absl::Milliseconds(200))) {
    EXPECT_EQ(st.code(), absl::StatusCode::kDeadlineExceeded);
  }
}

TEST(SchedulerTest, ClusterNotFormingInTimeNamesWhatIsMissing) {
  SchedulerOptions options;
  options.join_timeout = absl::Milliseconds(300);
  Harness h(2, 1, options);
  auto servers = h.Join(pb::ROLE_SERVER, {-1});
  absl::Status s = h.WaitRun();
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(s.message(), HasSubstr("missing 1 of 2 servers and 1 of 1 "
                                     "workers"));
  EXPECT_THAT(s.message(),
              HasSubstr(absl::StrCat("joined: server from 127.0.0.1:",
                                     servers[0]->po->port())));
  // The node that joined is told to stop instead of waiting forever.
  EXPECT_EQ(h.StartResult(servers[0]).code(), absl::StatusCode::kAborted);
}

TEST(SchedulerTest, DetectsNodeThatStopsHeartbeating) {
  SchedulerOptions options;
  options.heartbeat_timeout = absl::Milliseconds(500);
  Formed f(2, 1, options);
  absl::Time stopped = absl::Now();
  f.servers[1]->po->Stop();
  absl::Status s = f.h.WaitRun();
  absl::Duration took = absl::Now() - stopped;
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted);
  EXPECT_THAT(s.message(), HasSubstr("node 10 (server 1"));
  EXPECT_GE(took, absl::Milliseconds(250));  // not at once
  EXPECT_LT(took, absl::Seconds(5));
  std::vector<DeadNode> dead = f.h.scheduler()->dead_nodes();
  ASSERT_EQ(dead.size(), 1u);
  EXPECT_EQ(dead[0].node.id(), 10);
  EXPECT_GE(dead[0].silent_for, absl::Milliseconds(500));
  // The others learn that the job failed.
  EXPECT_EQ(f.workers[0]->po->WaitForTerminate(absl::Seconds(10)).code(),
            absl::StatusCode::kAborted);
  EXPECT_EQ(f.servers[0]->po->WaitForTerminate(absl::Seconds(10)).code(),
            absl::StatusCode::kAborted);
}

TEST(SchedulerTest, DeadNodeListedWithoutFailingWhenConfigured) {
  SchedulerOptions options;
  options.heartbeat_timeout = absl::Milliseconds(500);
  options.fail_on_dead_node = false;
  Formed f(2, 1, options);
  f.servers[0]->po->Stop();
  ASSERT_TRUE(
      WaitUntil([&] { return !f.h.scheduler()->dead_nodes().empty(); }));
  std::vector<DeadNode> dead = f.h.scheduler()->dead_nodes();
  ASSERT_EQ(dead.size(), 1u);
  EXPECT_EQ(dead[0].node.id(), 8);
  EXPECT_TRUE(f.workers[0]->po->Finish(absl::Seconds(10)).ok());
  EXPECT_TRUE(f.h.WaitRun().ok());
  EXPECT_EQ(f.h.scheduler()->dead_nodes().size(), 1u);
}

// A replacement's CAUGHT_UP names the map its copies were made against;
// when a failover since then moved a range it copied to another primary
// (the source died, and its successor never forwarded to the replacement),
// the scheduler refuses it with the reason; one made against the current
// map is accepted and the replacement is a replica again.
TEST(SchedulerTest, RefusesACaughtUpMadeAgainstAMapWhoseSourceDiedSince) {
  SchedulerOptions options;
  options.replicas = 3;
  options.heartbeat_timeout =
      absl::Seconds(2);  // a loaded machine or TSan stalls 0.5 s
  Formed f(3, 1, options);
  f.servers[0]->po->Stop();
  ASSERT_TRUE(WaitUntil([&] { return f.workers[0]->po->map_version() == 2; }));
  Harness::Node* newcomer = f.h.AddNode(pb::ROLE_SERVER);
  ASSERT_TRUE(newcomer->po->Start().ok());
  ASSERT_EQ(newcomer->po->my_rank(), 0);
  const ReplicaMap copied_against = newcomer->po->replica_map();
  ASSERT_EQ(copied_against.version(), 2u);
  ASSERT_EQ(copied_against.CopySources(0).size(), 2u);  // servers 1 and 2
  // Server 1, a source, dies after the newcomer's copies were made.
  f.servers[1]->po->Stop();
  ASSERT_TRUE(WaitUntil([&] { return newcomer->po->map_version() == 3; }));
  ASSERT_NE(newcomer->po->replica_map().CopySources(0),
            copied_against.CopySources(0));
  absl::Status s = newcomer->po->SendCaughtUp(2, absl::Seconds(10));
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(s.message(), HasSubstr("map version 2, and a source of them "
                                     "died since (the map is at version 3)"));
  EXPECT_TRUE(newcomer->po->replica_map().dead(0));
  EXPECT_EQ(f.h.scheduler_metrics()
                .Value("petrel_scheduler_stale_catch_ups_total")
                .value_or(0),
            1);
  // Copies made again against the current map are accepted.
  EXPECT_TRUE(newcomer->po->SendCaughtUp(3, absl::Seconds(10)).ok());
  const ReplicaMap back = newcomer->po->replica_map();
  EXPECT_EQ(back.version(), 4u);
  EXPECT_FALSE(back.dead(0));
  EXPECT_TRUE(WaitUntil([&] { return f.workers[0]->po->map_version() == 4; }));
  // A CAUGHT_UP from a server that is not copying anything is answered too.
  s = f.servers[2]->po->SendCaughtUp(4, absl::Seconds(10));
  EXPECT_THAT(s.message(), HasSubstr("not a server copying key ranges"));
}

TEST(SchedulerTest, FinishTerminatesEveryNodeCleanly) {
  Formed f(2, 2);
  std::vector<absl::Status> results(f.workers.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < f.workers.size(); ++i) {
    threads.emplace_back(
        [&, i] { results[i] = f.workers[i]->po->Finish(absl::Seconds(10)); });
  }
  for (auto& t : threads) t.join();
  for (const absl::Status& s : results) EXPECT_TRUE(s.ok()) << s;
  for (auto* n : f.servers) {
    EXPECT_TRUE(n->po->WaitForTerminate(absl::Seconds(10)).ok());
  }
  EXPECT_TRUE(f.h.WaitRun().ok());
  EXPECT_TRUE(f.h.scheduler()->dead_nodes().empty());
}

TEST(SchedulerTest, RunWaitsForEveryWorker) {
  Formed f(1, 2);
  // One worker done: the job goes on.
  std::thread first(
      [&] { EXPECT_TRUE(f.workers[0]->po->Finish(absl::Seconds(10)).ok()); });
  EXPECT_EQ(f.h.WaitRun(absl::Milliseconds(100)).code(),
            absl::StatusCode::kDeadlineExceeded);
  EXPECT_TRUE(f.workers[1]->po->Finish(absl::Seconds(10)).ok());
  first.join();
  EXPECT_TRUE(f.h.WaitRun().ok());
}

// A worker that the hook lets go: the barrier it misses passes without it
// and the job ends once the live workers finished.
TEST(SchedulerTest, AWorkerLostByTheHookNoLongerCounts) {
  SchedulerOptions options;
  options.heartbeat_timeout =
      absl::Seconds(2);  // a loaded machine or TSan stalls 0.5 s
  absl::Mutex mu;
  std::vector<int> offered;
  Formed f(1, 3, options, [&](int id) {
    absl::MutexLock lock(&mu);
    offered.push_back(id);
    return true;
  });
  // Worker 2 (node 13) is gone; the others wait for it at a barrier.
  f.workers[2]->po->Stop();
  std::vector<Postoffice*> live = {f.workers[0]->po.get(),
                                   f.workers[1]->po.get()};
  for (const absl::Status& s : BarrierAll(live, kWorkerGroup)) {
    EXPECT_TRUE(s.ok()) << s;
  }
  std::thread finisher(
      [&] { EXPECT_TRUE(f.workers[0]->po->Finish(absl::Seconds(10)).ok()); });
  EXPECT_TRUE(f.workers[1]->po->Finish(absl::Seconds(10)).ok());
  finisher.join();
  EXPECT_TRUE(f.h.WaitRun().ok());
  EXPECT_EQ(f.h.scheduler()->dead_nodes().size(), 1u);
  absl::MutexLock lock(&mu);
  EXPECT_EQ(offered, std::vector<int>{13});
}

// The hook refusing (e.g. a worker that never reported) fails the job as
// before.
TEST(SchedulerTest, AWorkerTheHookRefusesFailsTheJob) {
  SchedulerOptions options;
  options.heartbeat_timeout =
      absl::Seconds(2);  // a loaded machine or TSan stalls 0.5 s
  Formed f(1, 2, options, [](int) { return false; });
  f.workers[1]->po->Stop();
  absl::Status s = f.h.WaitRun();
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted);
  EXPECT_THAT(s.message(), HasSubstr("worker 1"));
}

}  // namespace
}  // namespace petrel
