// A range copy larger than one message (kv/replication/copy_parts.h):
// SplitCopy's cuts, and a copy over TCP between vans whose max_message_bytes is
// far below its size, taken while a worker keeps pushing: every key holds every
// acknowledged push exactly once.
#include "kv/replication/copy_parts.h"

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

#include "kv/kv_server.h"
#include "kv/kv_worker.h"
#include "tests/harness/local_cluster.h"
#include "van/zmq_van.h"

namespace petrel {
namespace {

constexpr absl::Duration kTimeout = absl::Seconds(20);

TEST(SplitCopyTest, CutsWholeEntriesWithinTheBudget) {
  // Entries of 1..5 floats: each 12 bytes plus 4 per float.
  KVPairs<float> rows;
  std::vector<Key> keys;
  std::vector<float> vals;
  std::vector<int> lens;
  for (int i = 0; i < 100; ++i) {
    keys.push_back(1000 + i);
    lens.push_back(1 + i % 5);
    for (int j = 0; j < lens.back(); ++j) vals.push_back(i * 10 + j);
  }
  rows.keys = SArray<Key>(std::vector<Key>(keys));
  rows.vals = SArray<float>(std::vector<float>(vals));
  rows.lens = SArray<int>(std::vector<int>(lens));
  const std::vector<KVPairs<float>> parts = SplitCopy(rows, 100);
  EXPECT_GT(parts.size(), 10u);
  std::vector<Key> all_keys;
  std::vector<float> all_vals;
  std::vector<int> all_lens;
  for (const KVPairs<float>& p : parts) {
    ASSERT_FALSE(p.keys.empty());
    ASSERT_EQ(p.lens.size(), p.keys.size());
    EXPECT_LE(p.keys.size() * 12 + p.vals.size() * 4, 100u);
    size_t n = 0;
    for (int len : p.lens) n += len;
    ASSERT_EQ(p.vals.size(), n);
    all_keys.insert(all_keys.end(), p.keys.begin(), p.keys.end());
    all_vals.insert(all_vals.end(), p.vals.begin(), p.vals.end());
    all_lens.insert(all_lens.end(), p.lens.begin(), p.lens.end());
  }
  EXPECT_EQ(all_keys, keys);
  EXPECT_EQ(all_vals, vals);
  EXPECT_EQ(all_lens, lens);
  // An entry over the budget goes alone; no entries make one empty part.
  const std::vector<KVPairs<float>> big = SplitCopy(rows, 10);
  EXPECT_EQ(big.size(), keys.size());
  EXPECT_EQ(SplitCopy(KVPairs<float>{}, 100).size(), 1u);
}

TEST(KVServerCopyPartsTest, CopyLargerThanAMessageGoesInParts) {
  constexpr int64_t kMaxMessage = 8192;
  LocalClusterOptions o;
  o.num_servers = 2;
  o.num_workers = 1;
  o.van_factory = [](pb::Role, int, VanOptions vo,
                     MetricsRegistry* metrics) -> std::unique_ptr<Van> {
    vo.limits.max_message_bytes = kMaxMessage;
    return std::make_unique<ZmqVan>(std::move(vo), metrics);
  };
  LocalCluster cluster(o);
  ASSERT_TRUE(cluster.Start().ok());
  std::vector<std::unique_ptr<KVStoreHandler<float>>> stores;
  std::vector<std::unique_ptr<KVServer<float>>> servers;
  for (int i = 0; i < 2; ++i) {
    stores.push_back(std::make_unique<KVStoreHandler<float>>());
    servers.push_back(std::make_unique<KVServer<float>>(0, cluster.server(i)));
    KVStoreHandler<float>* store = stores.back().get();
    servers.back()->set_request_handler(
        [store](const KVMeta& m, const KVPairs<float>& d, KVServer<float>* s) {
          (*store)(m, d, s);
        });
    store->EnableRangeCopy(servers.back().get());
    ASSERT_TRUE(servers.back()->Start().ok());
  }
  const KeyRangeMap map = cluster.server(1)->replica_map().ranges();
  std::vector<int> ranges;
  for (size_t i = 0; i < map.owners().size(); ++i) {
    if (map.owners()[i] == 0) ranges.push_back(static_cast<int>(i));
  }
  KVWorker<float> kv(0, 0, cluster.worker(0));
  ASSERT_TRUE(kv.Start().ok());
  // Pushes of 200 keys fit a message; the copy of server 0's ~2000 keys
  // (16 bytes each) does not.
  constexpr int kKeys = 4000;
  constexpr int kBatch = 200;
  constexpr int kRounds = 20;
  std::atomic<int> acked{0};
  std::atomic<bool> failed{false};
  std::thread pusher([&] {
    for (int r = 0; r < kRounds; ++r) {
      for (int from = 0; from < kKeys; from += kBatch) {
        SArray<Key> keys(kBatch);
        for (int k = 0; k < kBatch; ++k) keys[k] = from + k;
        SArray<float> vals(kBatch, 1.0f);
        if (!kv.Wait(kv.Push(keys, vals), kTimeout).ok()) {
          failed = true;
          return;
        }
      }
      acked.fetch_add(1);
    }
  });
  const absl::Time deadline = absl::Now() + kTimeout;
  while (acked.load() < 2 && absl::Now() < deadline && !failed.load()) {
    absl::SleepFor(absl::Milliseconds(1));  // polling, with a deadline
  }
  const absl::Status copied =
      servers[1]->CopyRangesFrom(ServerRankToId(0), ranges, kTimeout);
  const int acked_at_copy = acked.load();
  pusher.join();
  ASSERT_TRUE(copied.ok()) << copied;
  ASSERT_FALSE(failed.load());
  EXPECT_LT(acked_at_copy, kRounds) << "the copy did not race the pushes";
  EXPECT_GT(servers[1]->rows_copied_in() * 16, 3 * kMaxMessage);
  // Settled: a later request of server 1 was answered.
  Key own = 0;
  while (map.OwnerOf(own) != 1) ++own;
  SArray<float> got;
  ASSERT_TRUE(kv.Wait(kv.Pull(SArray<Key>{own}, &got), kTimeout).ok());
  for (int k = 0; k < kKeys; ++k) {
    if (map.OwnerOf(k) != 0) continue;
    const std::vector<float> primary = stores[0]->store().Get(k);
    ASSERT_EQ(primary, std::vector<float>({1.0f * kRounds})) << "key " << k;
    ASSERT_EQ(stores[1]->store().Get(k), primary) << "key " << k;
  }
  EXPECT_TRUE(cluster.Finish().ok());
}

}  // namespace
}  // namespace petrel
