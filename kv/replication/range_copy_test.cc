// The range copy to a replacement server (kv/replication/range_copy.cc): a
// copy taken while a worker keeps pushing holds every acknowledged push
// exactly once, and the source forwards what follows; the duplicate-
// detection state travels with it.
#include <atomic>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

#include "kv/kv_server.h"
#include "kv/kv_worker.h"
#include "tests/harness/local_cluster.h"

namespace petrel {
namespace {

constexpr absl::Duration kTimeout = absl::Seconds(20);

TEST(ReplicaDedupTest, ExportImportMergesStreams) {
  ReplicaDedup a;
  EXPECT_FALSE(a.SeenOrRecord(9, 0, 8, 5, /*in_order=*/true));
  EXPECT_FALSE(a.SeenOrRecord(9, 0, 10, 7, /*in_order=*/false));
  ReplicaDedup b;
  EXPECT_FALSE(b.SeenOrRecord(9, 0, 8, 2, /*in_order=*/true));
  ASSERT_TRUE(b.Import(a.Export()).ok());
  EXPECT_TRUE(b.SeenOrRecord(9, 0, 8, 4, false));   // under the watermark
  EXPECT_TRUE(b.SeenOrRecord(9, 0, 10, 7, false));  // above, listed
  EXPECT_FALSE(b.SeenOrRecord(9, 0, 10, 6, false));
  EXPECT_FALSE(b.SeenOrRecord(11, 0, 8, 1, false));
  // Bytes that do not parse are refused whole.
  std::string bad = a.Export();
  EXPECT_FALSE(b.Import(bad.substr(0, bad.size() - 8)).ok());
  EXPECT_FALSE(b.Import("abc").ok());
  EXPECT_TRUE(b.Import("").ok());
}

TEST(KVServerRangeCopyTest, CopyWhilePushingLosesAndRepeatsNothing) {
  LocalClusterOptions o;
  o.num_servers = 2;
  o.num_workers = 1;
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
  // Server 1 takes a copy of server 0's ranges, as a replacement would.
  const KeyRangeMap map = cluster.server(1)->replica_map().ranges();
  std::vector<int> ranges;
  for (size_t i = 0; i < map.owners().size(); ++i) {
    if (map.owners()[i] == 0) ranges.push_back(static_cast<int>(i));
  }
  ASSERT_FALSE(ranges.empty());
  KVWorker<float> kv(0, 0, cluster.worker(0));
  ASSERT_TRUE(kv.Start().ok());
  constexpr int kKeys = 2000;
  constexpr int kRounds = 60;
  SArray<Key> keys(kKeys);
  for (int k = 0; k < kKeys; ++k) keys[k] = k;
  std::atomic<int> acked{0};
  std::atomic<bool> failed{false};
  std::thread pusher([&] {
    for (int r = 0; r < kRounds; ++r) {
      // Two in flight, widths 1 (values r + 1 summed).
      SArray<float> vals(kKeys);
      for (float& v : vals) v = 1.0f;
      const int a = kv.Push(keys, vals);
      const int b = kv.Push(keys, vals);
      if (!kv.Wait(a, kTimeout).ok() || !kv.Wait(b, kTimeout).ok()) {
        failed = true;
        return;
      }
      acked.fetch_add(2);
    }
  });
  const absl::Time deadline = absl::Now() + kTimeout;
  while (acked.load() < 20 && absl::Now() < deadline && !failed.load()) {
    absl::SleepFor(absl::Milliseconds(1));  // polling, with a deadline
  }
  ASSERT_TRUE(
      servers[1]->CopyRangesFrom(ServerRankToId(0), ranges, kTimeout).ok());
  const int acked_at_copy = acked.load();
  pusher.join();
  ASSERT_FALSE(failed.load());
  EXPECT_LT(acked_at_copy, 2 * kRounds) << "the copy did not race the pushes";
  // A backup acknowledges a push before it sums it, then handles nothing
  // else first: once it answered a later request, its store is settled.
  Key own = 0;
  while (map.OwnerOf(own) != 1) ++own;
  SArray<float> got;
  ASSERT_TRUE(kv.Wait(kv.Pull(SArray<Key>{own}, &got), kTimeout).ok());
  // Every key of server 0 holds 2 * kRounds on both: the copy plus the
  // forwards after it, each push once.
  int checked = 0;
  for (int k = 0; k < kKeys; ++k) {
    if (map.OwnerOf(k) != 0) continue;
    ++checked;
    const std::vector<float> primary = stores[0]->store().Get(k);
    const std::vector<float> copy = stores[1]->store().Get(k);
    ASSERT_EQ(primary, std::vector<float>({2.0f * kRounds})) << "key " << k;
    ASSERT_EQ(copy, primary) << "key " << k;
  }
  EXPECT_GT(checked, kKeys / 4);
  EXPECT_GT(servers[1]->rows_copied_in(), 0);
  // A copy sets the rows it brings: copied again, they are not added to
  // those held (a server gaining a range in a drain may hold rows of it).
  ASSERT_TRUE(
      servers[1]->CopyRangesFrom(ServerRankToId(0), ranges, kTimeout).ok());
  for (int k = 0; k < kKeys; ++k) {
    if (map.OwnerOf(k) != 0) continue;
    ASSERT_EQ(stores[1]->store().Get(k), std::vector<float>({2.0f * kRounds}))
        << "key " << k;
  }
  // A source without a range copy says so.
  KVServer<float> plain(1, cluster.server(0));
  plain.set_request_handler(
      [](const KVMeta& m, const KVPairs<float>&, KVServer<float>* s) {
        s->Response(m).IgnoreError();
      });
  ASSERT_TRUE(plain.Start().ok());
  KVServer<float> asker(1, cluster.server(1));
  asker.set_request_handler(
      [](const KVMeta& m, const KVPairs<float>&, KVServer<float>* s) {
        s->Response(m).IgnoreError();
      });
  ASSERT_TRUE(asker.Start().ok());
  absl::Status refused =
      asker.CopyRangesFrom(ServerRankToId(0), ranges, kTimeout);
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition) << refused;
  EXPECT_TRUE(cluster.Finish().ok());
}

}  // namespace
}  // namespace petrel
