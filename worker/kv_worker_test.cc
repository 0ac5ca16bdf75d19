#include "worker/kv_worker.h"

#include <numeric>

#include "gtest/gtest.h"
#include "server/kv_server.h"
#include "tests/harness/local_cluster.h"

namespace petrel {
namespace {

template <typename Val>
struct KVCluster {
  static LocalClusterOptions Options(int servers, int workers) {
    LocalClusterOptions o;
    o.num_servers = servers;
    o.num_workers = workers;
    return o;
  }
  KVCluster(int servers, int workers) : cluster(Options(servers, workers)) {
    EXPECT_TRUE(cluster.Start().ok());
    for (int i = 0; i < servers; ++i) {
      handlers.push_back(std::make_unique<KVStoreHandler<Val>>());
      kv_servers.push_back(
          std::make_unique<KVServer<Val>>(0, cluster.server(i)));
      kv_servers.back()->set_request_handler(std::ref(*handlers.back()));
      EXPECT_TRUE(kv_servers.back()->Start().ok());
    }
    for (int i = 0; i < workers; ++i) {
      kv_workers.push_back(std::make_unique<KVWorker<Val>>(0, 0, cluster.worker(i)));
      EXPECT_TRUE(kv_workers.back()->Start().ok());
    }
  }
  LocalCluster cluster;
  std::vector<std::unique_ptr<KVStoreHandler<Val>>> handlers;
  std::vector<std::unique_ptr<KVServer<Val>>> kv_servers;
  std::vector<std::unique_ptr<KVWorker<Val>>> kv_workers;
};

TEST(KVWorkerTest, PushThenPullSumsAcrossServers) {
  KVCluster<float> c(2, 1);
  KVWorker<float>& kv = *c.kv_workers[0];
  SArray<Key> keys = {7, 1, 1000003, 42, 7};  // unordered, duplicate
  SArray<float> vals = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  ASSERT_TRUE(kv.Wait(kv.Push(keys, vals)).ok());
  ASSERT_TRUE(kv.Wait(kv.Push(keys, vals)).ok());
  SArray<float> out;
  ASSERT_TRUE(kv.Wait(kv.Pull(keys, &out), absl::Seconds(10)).ok());
  // Key 7 appears twice per push: (1+9)*2 and (2+10)*2.
  std::vector<float> want = {20, 24, 6, 8, 10, 12, 14, 16, 20, 24};
  EXPECT_EQ(out.ToVector(), want);
  EXPECT_GT(c.handlers[0]->num_keys(), 0u);
  EXPECT_GT(c.handlers[1]->num_keys(), 0u);
  EXPECT_TRUE(c.cluster.Finish().ok());
}

}  // namespace
}  // namespace petrel
