#include "worker/train/check_job.h"

#include <thread>

#include "absl/strings/match.h"
#include "gtest/gtest.h"

#include "kv/kv_server.h"
#include "tests/harness/local_cluster.h"

namespace petrel {
namespace {

using Handler = KVStoreHandler<float>;

// An in-process cluster whose servers store with `mode`.
struct CheckCluster {
  static LocalClusterOptions Options(int servers, int workers) {
    LocalClusterOptions o;
    o.num_servers = servers;
    o.num_workers = workers;
    return o;
  }
  CheckCluster(int servers, int workers, Handler::Mode mode)
      : cluster(Options(servers, workers)) {
    EXPECT_TRUE(cluster.Start().ok());
    for (int i = 0; i < servers; ++i) {
      handlers.push_back(std::make_unique<Handler>(mode));
      kv_servers.push_back(
          std::make_unique<KVServer<float>>(0, cluster.server(i)));
      kv_servers.back()->set_request_handler(std::ref(*handlers.back()));
      EXPECT_TRUE(kv_servers.back()->Start().ok());
    }
    for (int i = 0; i < workers; ++i) {
      kv_workers.push_back(
          std::make_unique<KVWorker<float>>(0, 0, cluster.worker(i)));
      EXPECT_TRUE(kv_workers.back()->Start().ok());
    }
  }
  // Runs the job on every worker at once (they meet at a barrier).
  std::vector<absl::StatusOr<std::string>> Run(const CheckJobOptions& o) {
    std::vector<absl::StatusOr<std::string>> results(kv_workers.size(),
                                                     absl::UnknownError(""));
    std::vector<std::thread> threads;
    for (size_t i = 0; i < kv_workers.size(); ++i) {
      threads.emplace_back([&, i] {
        results[i] = RunCheckJob(cluster.worker(static_cast<int>(i)),
                                 kv_workers[i].get(), o);
      });
    }
    for (std::thread& t : threads) t.join();
    return results;
  }
  LocalCluster cluster;
  std::vector<std::unique_ptr<Handler>> handlers;
  std::vector<std::unique_ptr<KVServer<float>>> kv_servers;
  std::vector<std::unique_ptr<KVWorker<float>>> kv_workers;
};

CheckJobOptions Quick() {
  CheckJobOptions o;
  o.num_keys = 500;
  o.rounds = 7;
  o.inflight = 3;
  o.timeout = absl::Seconds(20);
  return o;
}

TEST(CheckJobTest, PassesWithSummingServers) {
  CheckCluster c(2, 3, Handler::Mode::kSum);
  auto results = c.Run(Quick());
  for (size_t i = 0; i < results.size(); ++i) {
    ASSERT_TRUE(results[i].ok()) << results[i].status();
    EXPECT_TRUE(absl::StrContains(*results[i], "keys=500 rounds=7 ok=true"))
        << *results[i];
  }
  EXPECT_TRUE(c.cluster.Finish().ok());
}

TEST(CheckJobTest, NamesTheKeyWhenSumsAreWrong) {
  CheckCluster c(1, 1, Handler::Mode::kAssign);  // keeps 1, not 7 x 1
  auto results = c.Run(Quick());
  ASSERT_FALSE(results[0].ok());
  EXPECT_EQ(results[0].status().code(), absl::StatusCode::kDataLoss);
  EXPECT_TRUE(absl::StrContains(results[0].status().message(),
                                "mismatch at key 0: expected 7 got 1"))
      << results[0].status();
}

TEST(CheckJobTest, EndsEarlyWhenTheJobIsInterrupted) {
  CheckCluster c(1, 2, Handler::Mode::kSum);
  c.cluster.worker(0)->Interrupt("SIGTERM received");
  // Worker 0 stops at the barrier; worker 1 would wait there for 20 s.
  absl::StatusOr<std::string> r =
      RunCheckJob(c.cluster.worker(0), c.kv_workers[0].get(), Quick());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kAborted) << r.status();
  EXPECT_TRUE(absl::StrContains(r.status().message(), "SIGTERM received"));
}

TEST(CheckJobTest, RejectsBadOptionsAndInexactSums) {
  CheckJobOptions o = Quick();
  o.num_keys = 0;
  EXPECT_TRUE(absl::IsInvalidArgument(ValidateCheckJobOptions(o)));
  o = Quick();
  o.inflight = 0;
  EXPECT_TRUE(absl::IsInvalidArgument(ValidateCheckJobOptions(o)));
  o = Quick();
  o.rounds = 20000000;  // 2e7 x 1 >= 2^24
  ASSERT_TRUE(ValidateCheckJobOptions(o).ok());
  CheckCluster c(1, 1, Handler::Mode::kSum);
  EXPECT_TRUE(absl::IsInvalidArgument(
      RunCheckJob(c.cluster.worker(0), c.kv_workers[0].get(), o).status()));
}

}  // namespace
}  // namespace petrel
