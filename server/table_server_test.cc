#include "server/table_server.h"

#include <atomic>
#include <cmath>
#include <limits>
#include <memory>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "base/config_file.h"
#include "kv/kv_worker.h"
#include "tests/harness/local_cluster.h"

namespace petrel {
namespace {

using ::testing::HasSubstr;

constexpr absl::Duration kTimeout = absl::Seconds(20);

pb::JobConfig Job(const std::string& text) {
  pb::JobConfig job;
  absl::Status s = ParseTextProto(text, "job", &job);
  EXPECT_TRUE(s.ok()) << s;
  return job;
}

// A server node: KVServer + TableServer, with a handler wrapper that lets
// the test wait for the number of held pulls (a seam, not a sleep).
struct ServerNode {
  std::unique_ptr<TableServer> tables;
  absl::Mutex mu;
  size_t held ABSL_GUARDED_BY(mu) = 0;
  // Last, so it is destroyed first: the van thread calls its handler until
  // then.
  std::unique_ptr<KVServer<float>> kv;

  bool AwaitHeld(size_t n) {
    absl::MutexLock lock(&mu);
    auto done = [this, n]() ABSL_SHARED_LOCKS_REQUIRED(mu) -> bool {
      return held == n;
    };
    return mu.AwaitWithTimeout(absl::Condition(&done), kTimeout);
  }
};

struct Cluster {
  static LocalClusterOptions Options(int servers, int workers) {
    LocalClusterOptions o;
    o.num_servers = servers;
    o.num_workers = workers;
    return o;
  }
  Cluster(const pb::JobConfig& job, int servers, int workers,
          TableServerOptions options = {})
      : cluster(Options(servers, workers)) {
    EXPECT_TRUE(cluster.Start().ok());
    for (int i = 0; i < servers; ++i) {
      auto node = std::make_unique<ServerNode>();
      auto made =
          TableServer::Create(job, workers, cluster.server_metrics(i), options);
      EXPECT_TRUE(made.ok()) << made.status();
      node->tables = *std::move(made);
      EXPECT_TRUE(node->tables->Start().ok());
      node->kv = std::make_unique<KVServer<float>>(0, cluster.server(i));
      ServerNode* n = node.get();
      node->kv->set_request_handler([n](const KVMeta& meta,
                                        const KVPairs<float>& data,
                                        KVServer<float>* server) {
        n->tables->Handle(meta, data, server);
        absl::MutexLock lock(&n->mu);
        n->held = n->tables->num_held_pulls();
      });
      EXPECT_TRUE(node->kv->Start().ok());
      nodes.push_back(std::move(node));
    }
    for (int i = 0; i < workers; ++i) {
      kv.push_back(std::make_unique<KVWorker<float>>(0, 0, cluster.worker(i)));
      EXPECT_TRUE(kv.back()->Start().ok());
    }
  }
  ~Cluster() { EXPECT_TRUE(cluster.Finish().ok()); }

  LocalCluster cluster;
  std::vector<std::unique_ptr<ServerNode>> nodes;
  std::vector<std::unique_ptr<KVWorker<float>>> kv;
};

KVRequestOptions Table(int id, int64_t clock = -1,
                       int64_t* min_clock = nullptr) {
  KVRequestOptions o;
  o.table_id = id;
  o.clock = clock;
  o.min_clock = min_clock;
  return o;
}

TEST(TableServerTest, OptimizerUpdatesMatchHandComputedValues) {
  Cluster c(Job(R"(
    tables { id: 0 optimizer { kind: KIND_SGD learning_rate: 0.5 } }
    tables { id: 3 dim: 2 optimizer { kind: KIND_ADAGRAD learning_rate: 0.1 } }
    tables { id: 4 dense: true num_keys: 10 }
    consistency { max_delay: -1 }
  )"),
            2, 1);
  KVWorker<float>& kv = *c.kv[0];
  SArray<Key> keys = {7, 1, 1000003, 42};  // spread over both servers
  ASSERT_TRUE(
      kv.Wait(kv.Push(keys, SArray<float>{1, 2, 3, 4}, Table(0)), kTimeout)
          .ok());
  ASSERT_TRUE(
      kv.Wait(kv.Push(keys, SArray<float>{1, 1, 1, 1}, Table(0)), kTimeout)
          .ok());
  SArray<float> out;
  ASSERT_TRUE(kv.Wait(kv.Pull(keys, &out, Table(0)), kTimeout).ok());
  EXPECT_EQ(out.ToVector(), (std::vector<float>{-1.0f, -1.5f, -2.0f, -2.5f}));
  // Adagrad: n = 4, w = -0.1 * 2 / 2; then n = 8, w -= 0.1 * 2 / sqrt(8).
  SArray<Key> two = {5, 6};
  SArray<float> g = {2, 2, 2, 2};
  ASSERT_TRUE(kv.Wait(kv.Push(two, g, Table(3)), kTimeout).ok());
  ASSERT_TRUE(kv.Wait(kv.Push(two, g, Table(3)), kTimeout).ok());
  ASSERT_TRUE(kv.Wait(kv.Pull(two, &out, Table(3)), kTimeout).ok());
  ASSERT_EQ(out.size(), 4u);
  for (float w : out.ToVector())
    EXPECT_NEAR(w, -0.1 - 0.2 / std::sqrt(8.0), 1e-6);
  // Tables are separate: key 5 of table 0 is untouched.
  ASSERT_TRUE(kv.Wait(kv.Pull(SArray<Key>{5}, &out, Table(0)), kTimeout).ok());
  EXPECT_EQ(out.ToVector(), std::vector<float>{0.0f});
  // Errors reach the worker's Wait.
  absl::Status s = kv.Wait(kv.Pull(keys, &out, Table(9)), kTimeout);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("table 9"));
  s = kv.Wait(kv.Push(SArray<Key>{3, 10}, SArray<float>{1, 1}, Table(4)),
              kTimeout);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  s = kv.Wait(kv.Push(keys, SArray<float>{1, 2, 3, 4}, Table(3)), kTimeout);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  double pushes = 0;
  for (int i = 0; i < 2; ++i) {
    pushes += *c.cluster.server_metrics(i)->Value("petrel_table_pushes_total",
                                                  {{"table", "0"}});
  }
  EXPECT_EQ(pushes, 4);  // two pushes, each split over two servers
}

TEST(TableServerTest, RefusesNonFiniteAndOverflowingPushesNamingTheTable) {
  Cluster c(Job(R"(
    tables { id: 0 optimizer { kind: KIND_ADAGRAD } }
    consistency { max_delay: -1 }
  )"),
            1, 1);
  KVWorker<float>& kv = *c.kv[0];
  SArray<Key> keys = {1, 2, 3};
  ASSERT_TRUE(
      kv.Wait(kv.Push(keys, SArray<float>{1, 1, 1}, Table(0)), kTimeout).ok());
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  for (float bad : {nan, inf, -inf, 5e19f}) {
    absl::Status s = kv.Wait(
        kv.Push(keys, SArray<float>{0.5f, bad, 0.5f}, Table(0)), kTimeout);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_THAT(std::string(s.message()),
                HasSubstr("table 0 (optimizer Adagrad) refused"));
    EXPECT_THAT(std::string(s.message()), HasSubstr("of key 2"));
  }
  EXPECT_EQ(*c.cluster.server_metrics(0)->Value(
                "petrel_server_rejected_pushes_total", {}),
            4);
  // Nothing of a refused push was applied: the rows stay finite and as the
  // first push left them.
  SArray<float> out;
  ASSERT_TRUE(kv.Wait(kv.Pull(keys, &out, Table(0)), kTimeout).ok());
  for (float w : out.ToVector()) EXPECT_NEAR(w, -0.05f, 1e-6);
}

TEST(TableServerTest, LargePushesRunOnShardsAndMatchHandComputed) {
  TableServerOptions options;
  options.num_threads = 3;
  options.num_shards = 5;
  options.parallel_min_keys = 64;
  Cluster c(Job("tables { optimizer { kind: KIND_SGD learning_rate: 1 } }"), 1,
            1, options);
  KVWorker<float>& kv = *c.kv[0];
  SArray<Key> keys(1000);
  SArray<float> g(1000);
  for (size_t i = 0; i < keys.size(); ++i) {
    keys[i] = i % 300;  // duplicates: each occurrence applies
    g[i] = 1.0f;
  }
  ASSERT_TRUE(kv.Wait(kv.Push(keys, g, Table(0)), kTimeout).ok());
  SArray<float> out;
  SArray<Key> ask = {0, 99, 100, 299};
  ASSERT_TRUE(kv.Wait(kv.Pull(ask, &out, Table(0)), kTimeout).ok());
  EXPECT_EQ(out.ToVector(), (std::vector<float>{-4, -4, -3, -3}));
}

// Worker loop of the consistency tests: pull batch c, check the bound,
// push, clock. `before_clock` may block (the slowed worker).
struct Progress {
  absl::Mutex mu;
  std::vector<int64_t> clock ABSL_GUARDED_BY(mu);     // as the test knows them
  std::vector<int64_t> answered ABSL_GUARDED_BY(mu);  // pulls answered
  int violations ABSL_GUARDED_BY(mu) = 0;
};

void RunWorker(KVWorker<float>* kv, int rank, int batches, int64_t tau,
               Progress* p, const std::function<void(int64_t)>& before_clock,
               bool leave) {
  SArray<Key> keys = {1, 2, 3, 4, 1000003};
  SArray<float> grads(keys.size(), 1.0f);
  for (int64_t c = 0; c < batches; ++c) {
    SArray<float> w;
    int64_t min_clock = -1;
    ASSERT_TRUE(
        kv->Wait(kv->Pull(keys, &w, Table(0, c, &min_clock)), kTimeout).ok());
    {
      absl::MutexLock lock(&p->mu);
      ++p->answered[rank];
      bool ok = min_clock >= c - tau;
      for (int64_t other : p->clock)
        ok = ok && (other == -1 || other >= c - tau);
      if (!ok) ++p->violations;
    }
    ASSERT_TRUE(kv->Wait(kv->Push(keys, grads, Table(0)), kTimeout).ok());
    if (before_clock) before_clock(c + 1);
    {
      absl::MutexLock lock(&p->mu);
      p->clock[rank] = c + 1;  // recorded before the server can know it
    }
    ASSERT_TRUE(kv->Wait(kv->Clock(c + 1), kTimeout).ok());
  }
  if (!leave) return;
  {
    absl::MutexLock lock(&p->mu);
    p->clock[rank] = -1;
  }
  ASSERT_TRUE(kv->Wait(kv->Clock(-1), kTimeout).ok());
}

TEST(TableServerTest, BspAnswersNoPullBeforeEveryWorkerReachedItsClock) {
  Cluster c(Job("tables { optimizer { kind: KIND_SGD learning_rate: 1 } }"), 2,
            3);
  Progress p;
  {
    absl::MutexLock lock(&p.mu);
    p.clock.assign(3, 0);
    p.answered.assign(3, 0);
  }
  std::vector<std::thread> threads;
  for (int r = 0; r < 3; ++r) {
    threads.emplace_back(
        [&, r] { RunWorker(c.kv[r].get(), r, 6, 0, &p, nullptr, false); });
  }
  for (std::thread& t : threads) t.join();
  absl::MutexLock lock(&p.mu);
  EXPECT_EQ(p.violations, 0);
  EXPECT_EQ(p.answered, (std::vector<int64_t>{6, 6, 6}));
  EXPECT_EQ(c.nodes[0]->tables->min_clock(), 6);
  // Every push was applied: 3 workers x 6 batches of gradient 1, SGD lr 1.
  SArray<float> w;
  ASSERT_TRUE(c.kv[0]
                  ->Wait(c.kv[0]->Pull(SArray<Key>{1}, &w, Table(0)), kTimeout)
                  .ok());
  EXPECT_EQ(w.ToVector(), std::vector<float>{-18.0f});
}

TEST(TableServerTest, SspKeepsAFastWorkerWithinTwoClocksOfASlowOne) {
  Cluster c(Job("consistency { max_delay: 2 } "
                "tables { optimizer { kind: KIND_SGD } }"),
            1, 2);
  Progress p;
  {
    absl::MutexLock lock(&p.mu);
    p.clock.assign(2, 0);
    p.answered.assign(2, 0);
  }
  // The slow worker (rank 1) may send clock k only once allowed >= k.
  absl::Mutex latch_mu;
  int64_t allowed = 0;
  auto wait_allowed = [&](int64_t k) {
    absl::MutexLock lock(&latch_mu);
    auto ok = [&]() -> bool { return allowed >= k; };
    latch_mu.Await(absl::Condition(&ok));
  };
  auto allow = [&](int64_t k) {
    absl::MutexLock lock(&latch_mu);
    allowed = k;
  };
  std::thread fast(
      [&] { RunWorker(c.kv[0].get(), 0, 10, 2, &p, nullptr, true); });
  std::thread slow(
      [&] { RunWorker(c.kv[1].get(), 1, 3, 2, &p, wait_allowed, true); });
  for (int64_t s = 0; s < 3; ++s) {
    // Slow is at clock s: fast computes batches up to s + 2, and its pull for
    // s + 3 is held by the server.
    {
      absl::MutexLock lock(&p.mu);
      auto reached = [&]() ABSL_SHARED_LOCKS_REQUIRED(p.mu) -> bool {
        return p.answered[0] >= s + 3;
      };
      ASSERT_TRUE(p.mu.AwaitWithTimeout(absl::Condition(&reached), kTimeout));
    }
    ASSERT_TRUE(c.nodes[0]->AwaitHeld(1)) << "slow clock " << s;
    {
      absl::MutexLock lock(&p.mu);
      EXPECT_EQ(p.answered[0], s + 3);
      EXPECT_EQ(p.clock[1], s);
    }
    allow(s + 1);
  }
  // The slow worker leaves after its third batch: the fast one finishes.
  fast.join();
  slow.join();
  absl::MutexLock lock(&p.mu);
  EXPECT_EQ(p.violations, 0);
  EXPECT_EQ(p.answered, (std::vector<int64_t>{10, 3}));
}

TEST(TableServerTest, AspNeverHoldsAPull) {
  Cluster c(Job("consistency { max_delay: -1 }"), 1, 2);
  SArray<float> w;
  int64_t min_clock = -1;
  // Worker 1 never sends a clock; a pull for clock 10^9 is answered at once.
  ASSERT_TRUE(c.kv[0]
                  ->Wait(c.kv[0]->Pull(SArray<Key>{1, 2}, &w,
                                       Table(0, 1000000000, &min_clock)),
                         kTimeout)
                  .ok());
  EXPECT_EQ(min_clock, 0);
  EXPECT_EQ(w.ToVector(), (std::vector<float>{0, 0}));
  EXPECT_EQ(c.nodes[0]->tables->num_held_pulls(), 0u);
}

// ttl_clocks counts the rises of the job's smallest clock: a row no request
// touched during the last clock is gone once the clock rises past it.
TEST(TableServerTest, RowsUntouchedForTtlClocksAreEvicted) {
  Cluster c(Job("consistency { max_delay: -1 } "
                "tables { id: 0 ttl_clocks: 1 optimizer { kind: KIND_SGD } }"),
            1, 1);
  KVWorker<float>& w = *c.kv[0];
  const petrel::Table& table = *c.nodes[0]->tables->table(0);
  SArray<float> out;
  ASSERT_TRUE(w.Wait(w.Pull(SArray<Key>{1, 2}, &out, Table(0)), kTimeout).ok());
  ASSERT_TRUE(w.Wait(w.Clock(1), kTimeout).ok());
  EXPECT_EQ(table.num_rows(), 2u);
  ASSERT_TRUE(w.Wait(w.Pull(SArray<Key>{2}, &out, Table(0)), kTimeout).ok());
  ASSERT_TRUE(w.Wait(w.Clock(2), kTimeout).ok());
  EXPECT_EQ(table.Find(1), nullptr);
  EXPECT_NE(table.Find(2), nullptr);
  EXPECT_EQ(table.evicted(), 1u);
  ASSERT_TRUE(w.Wait(w.Clock(-1), kTimeout).ok());
}

TEST(TableServerTest, AWorkerThatLeavesReleasesAndNeverBlocks) {
  Cluster c(Job(""), 2, 2);  // BSP
  KVWorker<float>& w0 = *c.kv[0];
  SArray<Key> keys(32);  // on both servers
  for (size_t i = 0; i < keys.size(); ++i) keys[i] = i;
  ASSERT_TRUE(w0.Wait(w0.Clock(1), kTimeout).ok());
  SArray<float> out;
  int64_t min_clock = -1;
  bool answered = false;
  absl::Mutex mu;
  int ts = w0.Pull(keys, &out, Table(0, 1, &min_clock), [&] {
    absl::MutexLock lock(&mu);
    answered = true;
  });
  // Worker 1 is at clock 0: the pull for clock 1 waits on both servers.
  ASSERT_TRUE(c.nodes[0]->AwaitHeld(1));
  ASSERT_TRUE(c.nodes[1]->AwaitHeld(1));
  {
    absl::MutexLock lock(&mu);
    EXPECT_FALSE(answered);
  }
  ASSERT_TRUE(c.kv[1]->Wait(c.kv[1]->Clock(-1), kTimeout).ok());
  ASSERT_TRUE(w0.Wait(ts, kTimeout).ok());
  EXPECT_EQ(min_clock, 1);
  // From now on only worker 0 counts.
  for (int64_t clock = 1; clock < 4; ++clock) {
    ASSERT_TRUE(
        w0.Wait(w0.Pull(keys, &out, Table(0, clock, &min_clock)), kTimeout)
            .ok());
    EXPECT_EQ(min_clock, clock);
    ASSERT_TRUE(w0.Wait(w0.Clock(clock + 1), kTimeout).ok());
  }
  // A late clock from the worker that left does not bring it back.
  ASSERT_TRUE(c.kv[1]->Wait(c.kv[1]->Clock(0), kTimeout).ok());
  EXPECT_EQ(c.nodes[0]->tables->min_clock(), 4);
  ASSERT_TRUE(w0.Wait(w0.Clock(-1), kTimeout).ok());
  EXPECT_EQ(c.nodes[0]->tables->min_clock(), TableServer::kAllWorkersLeft);
}

// A worker that died (the scheduler's kDropWorker) releases what it held
// back, like one that left, and its late clocks do not bring it back.
TEST(TableServerTest, ADroppedWorkerReleasesTheHeldPulls) {
  Cluster c(Job("consistency { max_delay: 1 }"), 1, 2);
  KVWorker<float>& w0 = *c.kv[0];
  ASSERT_TRUE(c.kv[1]->Wait(c.kv[1]->Clock(2), kTimeout).ok());
  ASSERT_TRUE(w0.Wait(w0.Clock(4), kTimeout).ok());
  SArray<float> out;
  int64_t min_clock = -1;
  std::atomic<bool> answered{false};
  // Worker 1 is at clock 2: a pull for clock 4 (tau 1) waits.
  int ts = w0.Pull(SArray<Key>{1, 2}, &out, Table(0, 4, &min_clock),
                   [&] { answered = true; });
  ASSERT_TRUE(c.nodes[0]->AwaitHeld(1));
  EXPECT_FALSE(answered.load());
  // Quiet now (the pull is held), so not concurrent with Handle.
  EXPECT_EQ(c.nodes[0]->tables->DropWorker(1, c.nodes[0]->kv.get()), 2);
  ASSERT_TRUE(w0.Wait(ts, kTimeout).ok());
  EXPECT_EQ(min_clock, 4);
  EXPECT_EQ(c.nodes[0]->tables->DropWorker(1, c.nodes[0]->kv.get()), -1);
  EXPECT_EQ(c.nodes[0]->tables->DropWorker(7, c.nodes[0]->kv.get()), -1);
  ASSERT_TRUE(c.kv[1]->Wait(c.kv[1]->Clock(3), kTimeout).ok());
  EXPECT_EQ(c.nodes[0]->tables->min_clock(), 4);
}

TEST(TableServerTest, RejectsBadConfigNamingTheField) {
  auto made = TableServer::Create(
      Job("tables { optimizer { learning_rate: -1 } }"), 1, nullptr);
  EXPECT_EQ(made.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(made.status().message()),
              HasSubstr("tables[0].optimizer.learning_rate"));
  made = TableServer::Create(Job("consistency { max_delay: -3 }"), 1, nullptr);
  EXPECT_THAT(std::string(made.status().message()),
              HasSubstr("consistency.max_delay"));
  EXPECT_EQ(TableServer::Create(pb::JobConfig(), 0, nullptr).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace petrel
