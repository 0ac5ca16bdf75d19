// KVTypedStores: values of double, int32_t and int64_t summed exactly in
// their own type, one row per type per key; refused with a reason on a
// server of float tables.
#include "kv/kv_typed_stores.h"

#include <cstdint>
#include <functional>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "kv/kv_worker.h"
#include "tests/harness/local_cluster.h"

namespace petrel {
namespace {

using ::testing::HasSubstr;

constexpr absl::Duration kDeadline = absl::Seconds(10);

LocalClusterOptions Nodes() {
  LocalClusterOptions o;
  o.num_servers = 2;
  o.num_workers = 1;
  return o;
}

// Pushes `vals` twice to `keys` and pulls them back.
template <typename Val>
std::vector<Val> PushTwiceAndPull(KVWorker<Val>& kv, const SArray<Key>& keys,
                                  const SArray<Val>& vals) {
  EXPECT_TRUE(kv.Wait(kv.Push(keys, vals), kDeadline).ok());
  EXPECT_TRUE(kv.Wait(kv.Push(keys, vals), kDeadline).ok());
  SArray<Val> out;
  EXPECT_TRUE(kv.Wait(kv.Pull(keys, &out), kDeadline).ok());
  return out.ToVector();
}

TEST(KVTypedStoresTest, SumsEachTypeExactlyInItsOwnRows) {
  LocalCluster cluster(Nodes());
  ASSERT_TRUE(cluster.Start().ok());
  std::vector<std::unique_ptr<KVStoreHandler<float>>> handlers;
  // After what their handlers touch, so they are destroyed first: the van
  // thread calls the handlers until then.
  std::vector<std::unique_ptr<KVServer<float>>> floats;
  std::vector<std::unique_ptr<KVTypedStores>> typed;
  for (int i = 0; i < 2; ++i) {
    floats.push_back(std::make_unique<KVServer<float>>(0, cluster.server(i)));
    handlers.push_back(std::make_unique<KVStoreHandler<float>>());
    floats[i]->set_request_handler(std::ref(*handlers[i]));
    ASSERT_TRUE(floats[i]->Start().ok());
    typed.push_back(std::make_unique<KVTypedStores>(cluster.server(i),
                                                    /*sum=*/true,
                                                    /*tables=*/false));
    ASSERT_TRUE(typed[i]->Start().ok());
  }
  KVWorker<float> f32(KVAppOf<float>(), 0, cluster.worker(0));
  KVWorker<double> f64(KVAppOf<double>(), 0, cluster.worker(0));
  KVWorker<int32_t> i32(KVAppOf<int32_t>(), 0, cluster.worker(0));
  KVWorker<int64_t> i64(KVAppOf<int64_t>(), 0, cluster.worker(0));
  ASSERT_TRUE(f32.Start().ok());
  ASSERT_TRUE(f64.Start().ok());
  ASSERT_TRUE(i32.Start().ok());
  ASSERT_TRUE(i64.Start().ok());
  // Keys on both servers (the key range is split in halves).
  const SArray<Key> keys{7, ~Key{0} - 3};
  const int64_t big = (int64_t{1} << 53) + 1;  // not exact in a double
  EXPECT_EQ(PushTwiceAndPull(i64, keys, SArray<int64_t>{big, -big}),
            (std::vector<int64_t>{2 * big, -2 * big}));
  EXPECT_EQ(PushTwiceAndPull(f64, keys, SArray<double>{0.1, 1e300}),
            (std::vector<double>{0.1 + 0.1, 1e300 + 1e300}));
  EXPECT_EQ(PushTwiceAndPull(i32, keys, SArray<int32_t>{-5, 1 << 29}),
            (std::vector<int32_t>{-10, 1 << 30}));
  EXPECT_EQ(PushTwiceAndPull(f32, keys, SArray<float>{1.5f, 2.5f}),
            (std::vector<float>{3.0f, 5.0f}));
  EXPECT_TRUE(cluster.Finish().ok());
}

TEST(KVTypedStoresTest, AServerOfFloatTablesRefusesOtherTypes) {
  LocalCluster cluster(Nodes());
  ASSERT_TRUE(cluster.Start().ok());
  KVTypedStores a(cluster.server(0), /*sum=*/true, /*tables=*/true);
  KVTypedStores b(cluster.server(1), /*sum=*/true, /*tables=*/true);
  ASSERT_TRUE(a.Start().ok());
  ASSERT_TRUE(b.Start().ok());
  KVWorker<int64_t> kv(KVAppOf<int64_t>(), 0, cluster.worker(0));
  ASSERT_TRUE(kv.Start().ok());
  absl::Status s =
      kv.Wait(kv.Push(SArray<Key>{1}, SArray<int64_t>{1}), kDeadline);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(s.message(), HasSubstr("int64 values need servers without "
                                     "--config"));
  EXPECT_TRUE(cluster.Finish().ok());
}

}  // namespace
}  // namespace petrel
