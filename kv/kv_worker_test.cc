#include "kv/kv_worker.h"

#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <numeric>
#include <random>
#include <thread>

#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "kv/kv_server.h"
#include "tests/harness/local_cluster.h"
#include "van/zmq_van.h"

namespace petrel {
namespace {

template <typename Val>
struct KVCluster {
  static LocalClusterOptions Options(int servers, int workers,
                                     bool over_tcp = false) {
    LocalClusterOptions o;
    o.num_servers = servers;
    o.num_workers = workers;
    if (over_tcp) {  // ZmqVans on 127.0.0.1 instead of the loopback network
      o.van_factory = [](pb::Role, int, VanOptions vo,
                         MetricsRegistry* metrics) -> std::unique_ptr<Van> {
        return std::make_unique<ZmqVan>(std::move(vo), metrics);
      };
    }
    return o;
  }
  using Handler = typename KVServer<Val>::Handler;
  // `wrap`, when given, makes each server's handler around its store.
  KVCluster(int servers, int workers,
            std::function<Handler(KVStoreHandler<Val>*)> wrap = nullptr,
            bool accept_key_slices = true, bool over_tcp = false)
      : cluster(Options(servers, workers, over_tcp)) {
    EXPECT_TRUE(cluster.Start().ok());
    for (int i = 0; i < servers; ++i) {
      handlers.push_back(std::make_unique<KVStoreHandler<Val>>());
      kv_servers.push_back(
          std::make_unique<KVServer<Val>>(0, cluster.server(i)));
      kv_servers.back()->set_request_handler(
          wrap ? wrap(handlers.back().get())
               : Handler(std::ref(*handlers.back())),
          accept_key_slices);
      EXPECT_TRUE(kv_servers.back()->Start().ok());
    }
    for (int i = 0; i < workers; ++i) {
      kv_workers.push_back(
          std::make_unique<KVWorker<Val>>(0, 0, cluster.worker(i)));
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

// Over TCP a thread that waits for one request after another receives its
// answers itself (Van::AwaitResponse); requests nobody waits for are then
// still answered, through the van's own thread taking receiving back; and
// threads waiting together all get exact answers.
TEST(KVWorkerTest, OverTcpWaitersReceiveAndEveryAnswerArrives) {
  KVCluster<float> c(2, 1, nullptr, true, /*over_tcp=*/true);
  KVWorker<float>& kv = *c.kv_workers[0];
  SArray<Key> keys = {500, 5000003};  // on both servers
  SArray<float> twos = {2, 2};
  constexpr int kRounds = 50;
  int on_this_thread = 0;
  for (int r = 0; r < kRounds; ++r) {
    std::thread::id ran_on;
    int ts = kv.Push(keys, twos, {}, 0,
                     [&] { ran_on = std::this_thread::get_id(); });
    ASSERT_TRUE(kv.Wait(ts, absl::Seconds(10)).ok());
    on_this_thread += ran_on == std::this_thread::get_id();
  }
  // Not always: an answer may come before the wait begins.
  EXPECT_GT(on_this_thread, 0);

  constexpr int kUnwaited = 200;
  absl::Notification all_called;
  std::atomic<int> called{0};
  for (int i = 0; i < kUnwaited; ++i) {
    kv.Push(keys, twos, {}, 0, [&] {
      if (++called == kUnwaited) all_called.Notify();
    });
  }
  ASSERT_TRUE(all_called.WaitForNotificationWithTimeout(absl::Seconds(10)));

  constexpr int kThreads = 3;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&kv, t] {
      SArray<Key> own = {Key(t), Key(1000003) * (t + 1), Key(77) + t};
      SArray<float> ones = {1, 1, 1};
      for (int r = 1; r <= kRounds; ++r) {
        ASSERT_TRUE(kv.Wait(kv.Push(own, ones), absl::Seconds(10)).ok());
        SArray<float> out;
        ASSERT_TRUE(kv.Wait(kv.Pull(own, &out), absl::Seconds(10)).ok());
        ASSERT_EQ(out.ToVector(), std::vector<float>(3, r));
      }
    });
  }
  for (std::thread& t : threads) t.join();
  SArray<float> out;
  ASSERT_TRUE(kv.Wait(kv.Pull(keys, &out), absl::Seconds(10)).ok());
  EXPECT_EQ(out.ToVector(), std::vector<float>(2, 2 * (kRounds + kUnwaited)));
  EXPECT_TRUE(c.cluster.Finish().ok());
}

using ::testing::HasSubstr;
using ::testing::Not;

template <typename Val>
class KVWorkerTypedTest : public ::testing::Test {};
using ValueTypes = ::testing::Types<float, double, int32_t, int64_t>;
TYPED_TEST_SUITE(KVWorkerTypedTest, ValueTypes);

TYPED_TEST(KVWorkerTypedTest, PushPullAndPushPullSum) {
  using Val = TypeParam;
  KVCluster<Val> c(2, 1);
  KVWorker<Val>& kv = *c.kv_workers[0];
  SArray<Key> keys = {9, 3, 1u << 20, 77, 3};
  SArray<Val> vals = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  ASSERT_TRUE(kv.Wait(kv.Push(keys, vals), absl::Seconds(10)).ok());
  SArray<Val> out;
  ASSERT_TRUE(kv.Wait(kv.Pull(keys, &out), absl::Seconds(10)).ok());
  // Key 3 appears twice: (3+9) and (4+10).
  EXPECT_EQ(out.ToVector(),
            (std::vector<Val>{1, 2, 12, 14, 5, 6, 7, 8, 12, 14}));
  // PushPull adds and answers the updated sums in one round trip.
  SArray<Val> updated;
  ASSERT_TRUE(
      kv.Wait(kv.PushPull(keys, vals, &updated), absl::Seconds(10)).ok());
  EXPECT_EQ(updated.ToVector(),
            (std::vector<Val>{2, 4, 24, 28, 10, 12, 14, 16, 24, 28}));
  EXPECT_TRUE(c.cluster.Finish().ok());
}

TEST(KVWorkerTest, VariableLengthValues) {
  KVCluster<int64_t> c(3, 1);
  KVWorker<int64_t>& kv = *c.kv_workers[0];
  SArray<Key> keys = {5, 100, 7, 8};
  SArray<int> lens = {1, 3, 0, 2};
  SArray<int64_t> vals = {1, 2, 3, 4, 5, 6};
  ASSERT_TRUE(kv.Wait(kv.Push(keys, vals, lens), absl::Seconds(10)).ok());
  ASSERT_TRUE(kv.Wait(kv.Push(keys, vals, lens), absl::Seconds(10)).ok());
  SArray<Key> ask = {8, 100, 5, 7, 100};
  SArray<int64_t> out;
  SArray<int> out_lens;
  ASSERT_TRUE(kv.Wait(kv.Pull(ask, &out, &out_lens), absl::Seconds(10)).ok());
  EXPECT_EQ(out_lens.ToVector(), (std::vector<int>{2, 3, 1, 0, 3}));
  EXPECT_EQ(out.ToVector(),
            (std::vector<int64_t>{10, 12, 4, 6, 8, 2, 4, 6, 8}));
  // Without lens, values of different lengths cannot be returned.
  EXPECT_EQ(kv.Wait(kv.Pull(ask, &out), absl::Seconds(10)).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(c.cluster.Finish().ok());
}

TEST(KVWorkerTest, CallbacksRunBeforeWaitReturns) {
  KVCluster<float> c(2, 1);
  KVWorker<float>& kv = *c.kv_workers[0];
  SArray<Key> keys = {1, 2, 3, 4};
  SArray<float> vals = {1, 2, 3, 4};
  std::atomic<int> pushed{0};
  int ts = kv.Push(keys, vals, {}, 0, [&] { ++pushed; });
  ASSERT_TRUE(kv.Wait(ts, absl::Seconds(10)).ok());
  EXPECT_EQ(pushed, 1);
  SArray<float> out;
  std::vector<float> seen_in_callback;
  ts = kv.Pull(keys, &out, nullptr, 0,
               [&] { seen_in_callback = out.ToVector(); });
  ASSERT_TRUE(kv.Wait(ts, absl::Seconds(10)).ok());
  EXPECT_EQ(seen_in_callback, vals.ToVector());
  // A request that fails early still runs its callback.
  std::atomic<int> failed{0};
  ts = kv.Push(keys, SArray<float>{1, 2, 3}, {}, 0, [&] { ++failed; });
  EXPECT_EQ(kv.Wait(ts).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(failed, 1);
  EXPECT_TRUE(c.cluster.Finish().ok());
}

TEST(KVWorkerTest, RandomKeysMatchReferenceAcrossThreeServers) {
  KVCluster<double> c(3, 1);
  KVWorker<double>& kv = *c.kv_workers[0];
  std::mt19937_64 rng(12345);
  std::uniform_int_distribution<Key> key_dist(0, 4999);
  std::uniform_int_distribution<int> val_dist(-1000, 1000);
  std::map<Key, std::vector<double>> want;
  for (int round = 0; round < 2; ++round) {
    SArray<Key> keys(10000);
    SArray<double> vals(2 * keys.size());
    for (size_t i = 0; i < keys.size(); ++i) {
      keys[i] = key_dist(rng);
      vals[2 * i] = val_dist(rng);
      vals[2 * i + 1] = val_dist(rng);
      std::vector<double>& row = want[keys[i]];
      row.resize(2, 0.0);
      row[0] += vals[2 * i];
      row[1] += vals[2 * i + 1];
    }
    ASSERT_TRUE(kv.Wait(kv.Push(keys, vals), absl::Seconds(10)).ok());
  }
  std::vector<Key> pushed;
  for (const auto& [k, v] : want) pushed.push_back(k);
  std::uniform_int_distribution<size_t> pick(0, pushed.size() - 1);
  SArray<Key> ask(10000);
  for (Key& k : ask) k = pushed[pick(rng)];
  SArray<double> out(2 * ask.size(), -1.0);  // pre-sized: written in place
  const double* before = out.data();
  ASSERT_TRUE(kv.Wait(kv.Pull(ask, &out), absl::Seconds(10)).ok());
  EXPECT_EQ(out.data(), before);
  ASSERT_EQ(out.size(), 2 * ask.size());
  for (size_t i = 0; i < ask.size(); ++i) {
    ASSERT_EQ(out[2 * i], want[ask[i]][0]) << "key " << ask[i];
    ASSERT_EQ(out[2 * i + 1], want[ask[i]][1]) << "key " << ask[i];
  }
  for (int s = 0; s < 3; ++s) EXPECT_GT(c.handlers[s]->num_keys(), 1000u);
  EXPECT_TRUE(c.cluster.Finish().ok());
}

TEST(KVWorkerTest, LargePushesArriveInPartsAndSumExactly) {
  // Count the messages the servers' handlers see, and the highest part.
  std::atomic<int> messages{0};
  std::atomic<int> max_part{0};
  KVCluster<int32_t> c(2, 1, [&](KVStoreHandler<int32_t>* store) {
    return [&, store](const KVMeta& meta, const KVPairs<int32_t>& data,
                      KVServer<int32_t>* server) {
      if (meta.push) ++messages;
      if (meta.part > max_part) max_part = meta.part;
      (*store)(meta, data, server);
    };
  });
  KVWorker<int32_t>& kv = *c.kv_workers[0];
  kv.set_max_push_part_bytes(100);  // 8 keys of 3 values
  SArray<Key> keys(200);
  SArray<int32_t> vals(3 * keys.size());
  std::iota(keys.begin(), keys.end(), 1000);
  std::iota(vals.begin(), vals.end(), 1);
  for (int round = 0; round < 2; ++round) {
    ASSERT_TRUE(kv.Wait(kv.Push(keys, vals), absl::Seconds(10)).ok());
  }
  // 2 pushes of 2400 bytes in parts of at most 96: at least 2 * 25.
  EXPECT_GE(messages, 50);
  EXPECT_GE(max_part, 12);
  SArray<int32_t> out;
  ASSERT_TRUE(kv.Wait(kv.Pull(keys, &out), absl::Seconds(10)).ok());
  for (size_t i = 0; i < vals.size(); ++i) ASSERT_EQ(out[i], 2 * vals[i]);
  // Splitting off: one message per server.
  kv.set_max_push_part_bytes(0);
  messages = 0;
  ASSERT_TRUE(kv.Wait(kv.Push(keys, vals), absl::Seconds(10)).ok());
  EXPECT_EQ(messages, 2);
  EXPECT_TRUE(c.cluster.Finish().ok());
}

TEST(KVWorkerTest, LargePullsGoInPartsAndMergeInOrder) {
  for (int servers : {1, 2}) {
    SCOPED_TRACE(servers);
    std::atomic<int> pulls{0};
    KVCluster<float> c(servers, 1, [&](KVStoreHandler<float>* store) {
      return [&, store](const KVMeta& meta, const KVPairs<float>& data,
                        KVServer<float>* server) {
        if (meta.pull) ++pulls;
        (*store)(meta, data, server);
      };
    });
    KVWorker<float>& kv = *c.kv_workers[0];
    std::mt19937_64 rng(7);
    SArray<Key> keys(300);
    SArray<float> vals(2 * keys.size());
    for (size_t i = 0; i < keys.size(); ++i) {
      keys[i] = rng() % 100000;
      vals[2 * i] = static_cast<float>(i);
      vals[2 * i + 1] = -static_cast<float>(i);
    }
    std::sort(keys.begin(), keys.end());
    keys = keys.Segment(
        0, static_cast<size_t>(std::unique(keys.begin(), keys.end()) -
                               keys.begin()));
    vals = vals.Segment(0, 2 * keys.size());
    ASSERT_TRUE(kv.Wait(kv.Push(keys, vals), absl::Seconds(10)).ok());
    // Ask in another order, with repeats: positions and parts mixed.
    SArray<Key> ask(400);
    for (Key& k : ask) k = keys[rng() % keys.size()];
    // Parts of 16 keys of 2 values, once an answer told the width: the
    // first pull goes whole.
    kv.set_max_pull_part_bytes(16 * 2 * sizeof(float));
    SArray<float> out;
    ASSERT_TRUE(kv.Wait(kv.Pull(ask, &out), absl::Seconds(10)).ok());
    EXPECT_EQ(pulls, servers);
    pulls = 0;
    ASSERT_TRUE(kv.Wait(kv.Pull(ask, &out), absl::Seconds(10)).ok());
    EXPECT_GE(pulls, 400 / 16);
    ASSERT_EQ(out.size(), 2 * ask.size());
    auto want = [&](Key k, int j) {
      const size_t i = static_cast<size_t>(
          std::lower_bound(keys.begin(), keys.end(), k) - keys.begin());
      return vals[2 * i + j];
    };
    for (size_t i = 0; i < ask.size(); ++i) {
      ASSERT_EQ(out[2 * i], want(ask[i], 0)) << i;
      ASSERT_EQ(out[2 * i + 1], want(ask[i], 1)) << i;
    }
    // The caller's keys in order (one server: parts by first position).
    pulls = 0;
    SArray<int> lens;
    ASSERT_TRUE(kv.Wait(kv.Pull(keys, &out, &lens), absl::Seconds(10)).ok());
    EXPECT_GE(pulls, static_cast<int>(keys.size() / 16));
    EXPECT_EQ(out.ToVector(), vals.ToVector());
    EXPECT_EQ(lens.ToVector(), std::vector<int>(keys.size(), 2));
    // Splitting off: one message per server.
    kv.set_max_pull_part_bytes(0);
    pulls = 0;
    ASSERT_TRUE(kv.Wait(kv.Pull(ask, &out), absl::Seconds(10)).ok());
    EXPECT_EQ(pulls, servers);
    EXPECT_TRUE(c.cluster.Finish().ok());
  }
}

TEST(KVWorkerTest, PullPartsArePlacedAsTheyArrive) {
  // Two servers, keys over the whole key space: parts of both servers'
  // slices, with positions. Each answer is copied to its place on arrival.
  KVCluster<float> c(2, 1);
  KVWorker<float>& kv = *c.kv_workers[0];
  std::mt19937_64 rng(11);
  SArray<Key> narrow(64), wide(64);
  for (Key& k : narrow) k = rng();
  for (Key& k : wide) k = rng();
  SArray<float> narrow_vals(2 * narrow.size()), wide_vals(3 * wide.size());
  std::iota(narrow_vals.begin(), narrow_vals.end(), 1.0f);
  std::iota(wide_vals.begin(), wide_vals.end(), 1000.0f);
  ASSERT_TRUE(kv.Wait(kv.Push(narrow, narrow_vals), absl::Seconds(10)).ok());
  ASSERT_TRUE(kv.Wait(kv.Push(wide, wide_vals), absl::Seconds(10)).ok());
  kv.set_max_pull_part_bytes(8 * 2 * sizeof(float));  // parts of 8 keys
  SArray<float> out;
  ASSERT_TRUE(kv.Wait(kv.Pull(narrow, &out), absl::Seconds(10)).ok());
  EXPECT_EQ(out.ToVector(), narrow_vals.ToVector());  // whole: width unknown
  // Into a fresh array, then into the caller's array of the right size,
  // which is written in place.
  out = SArray<float>();
  ASSERT_TRUE(kv.Wait(kv.Pull(narrow, &out), absl::Seconds(10)).ok());
  EXPECT_EQ(out.ToVector(), narrow_vals.ToVector());
  std::fill(out.begin(), out.end(), 0.0f);
  const float* before = out.data();
  SArray<int> lens;
  ASSERT_TRUE(kv.Wait(kv.Pull(narrow, &out, &lens), absl::Seconds(10)).ok());
  EXPECT_EQ(out.data(), before);
  EXPECT_EQ(out.ToVector(), narrow_vals.ToVector());
  EXPECT_EQ(lens.ToVector(), std::vector<int>(narrow.size(), 2));
  // Parts of two widths: merged at completion, with lens...
  SArray<Key> both(narrow.size() + wide.size());
  std::copy(narrow.begin(), narrow.end(), both.begin());
  std::copy(wide.begin(), wide.end(), both.begin() + narrow.size());
  std::vector<float> want = narrow_vals.ToVector();
  want.insert(want.end(), wide_vals.begin(), wide_vals.end());
  std::vector<int> want_lens(narrow.size(), 2);
  want_lens.resize(both.size(), 3);
  out = SArray<float>();
  ASSERT_TRUE(kv.Wait(kv.Pull(both, &out, &lens), absl::Seconds(10)).ok());
  EXPECT_EQ(out.ToVector(), want);
  EXPECT_EQ(lens.ToVector(), want_lens);
  // ... and without lens, an error that says why.
  absl::Status s = kv.Wait(kv.Pull(both, &out), absl::Seconds(10));
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_TRUE(c.cluster.Finish().ok());
}

TEST(KVWorkerTest, LargeKeysGoInSlicesAndSumExactly) {
  std::atomic<int> slices{0};
  KVCluster<float> c(2, 1, [&](KVStoreHandler<float>* store) {
    return [&, store](const KVMeta& meta, const KVPairs<float>& data,
                      KVServer<float>* server) {
      if (meta.value_total > 0) ++slices;
      (*store)(meta, data, server);
    };
  });
  KVWorker<float>& kv = *c.kv_workers[0];
  kv.set_max_push_part_bytes(40);  // 10 floats
  kv.set_split_large_keys(true);
  // Key 1: 95 values (10 slices); keys 2 and 3: 3 values each, sent whole.
  SArray<Key> keys = {2, 1, 3};
  SArray<int> lens = {3, 95, 3};
  SArray<float> vals(101);
  std::iota(vals.begin(), vals.end(), 1.0f);
  for (int round = 0; round < 2; ++round) {
    ASSERT_TRUE(kv.Wait(kv.Push(keys, vals, lens), absl::Seconds(10)).ok());
  }
  EXPECT_EQ(slices, 20);
  SArray<float> out;
  SArray<int> out_lens;
  ASSERT_TRUE(kv.Wait(kv.Pull(keys, &out, &out_lens), absl::Seconds(10)).ok());
  EXPECT_EQ(out_lens.ToVector(), lens.ToVector());
  for (size_t i = 0; i < vals.size(); ++i) ASSERT_EQ(out[i], 2 * vals[i]) << i;
  EXPECT_TRUE(c.cluster.Finish().ok());
}

TEST(KVWorkerTest, KeySlicesOverwriteInAssignMode) {
  KVStoreHandler<int32_t> assign(KVStoreHandler<int32_t>::Mode::kAssign);
  KVCluster<int32_t> c(1, 1, [&](KVStoreHandler<int32_t>*) {
    return KVServer<int32_t>::Handler(std::ref(assign));
  });
  KVWorker<int32_t>& kv = *c.kv_workers[0];
  kv.set_max_push_part_bytes(8);
  kv.set_split_large_keys(true);
  SArray<Key> key = {3};
  for (int32_t base : {100, 200}) {
    SArray<int32_t> vals = {base + 1, base + 2, base + 3, base + 4, base + 5};
    ASSERT_TRUE(kv.Wait(kv.Push(key, vals), absl::Seconds(10)).ok());
  }
  SArray<int32_t> out;
  ASSERT_TRUE(kv.Wait(kv.Pull(key, &out), absl::Seconds(10)).ok());
  EXPECT_EQ(out.ToVector(), (std::vector<int32_t>{201, 202, 203, 204, 205}));
  EXPECT_TRUE(c.cluster.Finish().ok());
}

TEST(KVWorkerTest, KeySlicesToAHandlerThatDoesNotTakeThemFail) {
  KVCluster<float> c(1, 1, nullptr, /*accept_key_slices=*/false);
  KVWorker<float>& kv = *c.kv_workers[0];
  kv.set_max_push_part_bytes(8);
  kv.set_split_large_keys(true);
  absl::Status s = kv.Wait(
      kv.Push(SArray<Key>{5}, SArray<float>{1, 2, 3, 4, 5}), absl::Seconds(10));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("set_split_large_keys"));
  // Sent whole, the same push is taken.
  kv.set_split_large_keys(false);
  EXPECT_TRUE(kv.Wait(kv.Push(SArray<Key>{5}, SArray<float>{1, 2, 3, 4, 5}),
                      absl::Seconds(10))
                  .ok());
  EXPECT_TRUE(c.cluster.Finish().ok());
}

TEST(KVWorkerTest, BadArgumentsFailWait) {
  KVCluster<float> c(2, 1);
  KVWorker<float>& kv = *c.kv_workers[0];
  SArray<Key> keys = {1, 2, 3};
  const auto kBad = absl::StatusCode::kInvalidArgument;
  EXPECT_EQ(kv.Wait(kv.Push(keys, SArray<float>{1, 2})).code(), kBad);
  EXPECT_EQ(kv.Wait(kv.Push(keys, SArray<float>{1, 2, 3}, {1, 2})).code(),
            kBad);
  EXPECT_EQ(kv.Wait(kv.Push(keys, SArray<float>{1, 2, 3}, {1, 1, 2})).code(),
            kBad);
  EXPECT_EQ(kv.Wait(kv.Pull(keys, nullptr)).code(), kBad);
  EXPECT_EQ(kv.Wait(kv.PushPull(keys, SArray<float>{1, 2, 3}, nullptr)).code(),
            kBad);
  // The worker is still usable afterwards.
  EXPECT_TRUE(
      kv.Wait(kv.Push(keys, SArray<float>{1, 2, 3}), absl::Seconds(10)).ok());
  EXPECT_TRUE(c.cluster.Finish().ok());
}

// Servers whose handler answers a pull through KVServer::Response with
// values (and lens) that do not fit the keys asked: the pull fails with a
// clear error, nothing crashes, and a good pull works afterwards.
TEST(KVWorkerTest, PullAnswersThatDoNotFitTheKeysAskedFailClearly) {
  using Handler = KVServer<float>::Handler;
  // cmd 1: one value too many; cmd 2: lens for one key too many; cmd 3:
  // lens that sum to more than the values.
  KVCluster<float> c(2, 1, [](KVStoreHandler<float>* store) -> Handler {
    return [store](const KVMeta& meta, const KVPairs<float>& d,
                   KVServer<float>* server) {
      if (meta.cmd == 0 || !meta.pull) return (*store)(meta, d, server);
      KVPairs<float> out;
      const size_t n = d.keys.size();
      out.vals = SArray<float>(meta.cmd == 1 ? n + 1 : n, 1.0f);
      if (meta.cmd == 2) {  // they sum to the values: only the count is off
        out.lens = SArray<int>(n + 1, 1);
        out.lens[n] = 0;
      }
      if (meta.cmd == 3) out.lens = SArray<int>(n, 2);
      server->Response(meta, out).IgnoreError();
    };
  });
  KVWorker<float>& kv = *c.kv_workers[0];
  // Keys on both servers (the key space splits in two halves).
  SArray<Key> keys = {1, 2, ~Key{0} - 1, 3};
  ASSERT_TRUE(
      kv.Wait(kv.Push(keys, SArray<float>{1, 2, 3, 4}), absl::Seconds(10))
          .ok());
  const char* expected[] = {"", "values for", "lens for", "lens sum to"};
  for (int cmd : {1, 2, 3}) {
    SCOPED_TRACE(cmd);
    SArray<float> out;
    SArray<int> lens;
    absl::Status s =
        kv.Wait(kv.Pull(keys, &out, &lens, cmd), absl::Seconds(10));
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_THAT(s.message(), ::testing::HasSubstr("malformed answer"));
    EXPECT_THAT(s.message(), ::testing::HasSubstr(expected[cmd]));
  }
  SArray<float> out;
  ASSERT_TRUE(kv.Wait(kv.Pull(keys, &out), absl::Seconds(10)).ok());
  EXPECT_EQ(out.ToVector(), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_TRUE(c.cluster.Finish().ok());
}

LocalClusterOptions Nodes(int servers, int workers) {
  LocalClusterOptions o;
  o.num_servers = servers;
  o.num_workers = workers;
  return o;
}

TEST(KVWorkerTest, WaitDeadlineNamesServerThatNeverAnswers) {
  LocalCluster cluster(Nodes(2, 1));
  ASSERT_TRUE(cluster.Start().ok());
  KVStoreHandler<float> store;
  KVServer<float> answering(0, cluster.server(0));
  answering.set_request_handler(std::ref(store));
  ASSERT_TRUE(answering.Start().ok());
  KVServer<float> silent(0, cluster.server(1));
  silent.set_request_handler(
      [](const KVMeta&, const KVPairs<float>&, KVServer<float>*) {});
  ASSERT_TRUE(silent.Start().ok());
  KVWorker<float> kv(0, 0, cluster.worker(0));
  ASSERT_TRUE(kv.Start().ok());
  SArray<Key> keys(100);
  std::iota(keys.begin(), keys.end(), 0);
  SArray<float> vals(keys.size(), 1.0f);
  absl::Status s = kv.Wait(kv.Push(keys, vals), absl::Milliseconds(500));
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(s.message(), HasSubstr("10 (server 1)"));
  EXPECT_THAT(s.message(), Not(HasSubstr("(server 0)")));
  EXPECT_TRUE(cluster.Finish().ok());
}

TEST(KVWorkerTest, CustomersOfOneNodeRouteIndependently) {
  KVCluster<float> c(2, 1);
  KVWorker<float>& a = *c.kv_workers[0];
  KVWorker<float> b(0, /*customer_id=*/1, c.cluster.worker(0));
  ASSERT_TRUE(b.Start().ok());
  SArray<Key> ka = {1, 2, 3, 4};
  SArray<Key> kb = {5, 6, 7, 8, 9};
  ASSERT_TRUE(a.Wait(a.Push(ka, SArray<float>(4, 1.0f))).ok());
  ASSERT_TRUE(b.Wait(b.Push(kb, SArray<float>(5, 2.0f))).ok());
  // Both customers have requests with the same timestamps in flight.
  for (int round = 0; round < 20; ++round) {
    SArray<float> oa, ob;
    int ta = a.Pull(ka, &oa);
    int tb = b.Pull(kb, &ob);
    ASSERT_TRUE(a.Wait(ta, absl::Seconds(10)).ok());
    ASSERT_TRUE(b.Wait(tb, absl::Seconds(10)).ok());
    EXPECT_EQ(oa.ToVector(), std::vector<float>(4, 1.0f));
    EXPECT_EQ(ob.ToVector(), std::vector<float>(5, 2.0f));
  }
  EXPECT_TRUE(c.cluster.Finish().ok());
}

TEST(KVWorkerTest, AppsOfOneNodeRouteIndependently) {
  LocalCluster cluster(Nodes(2, 1));
  ASSERT_TRUE(cluster.Start().ok());
  // App 0 sums floats; app 1 assigns int64s.
  std::vector<std::unique_ptr<KVStoreHandler<float>>> sums;
  std::vector<std::unique_ptr<KVStoreHandler<int64_t>>> assigns;
  std::vector<std::unique_ptr<KVServer<float>>> app0;
  std::vector<std::unique_ptr<KVServer<int64_t>>> app1;
  for (int i = 0; i < 2; ++i) {
    sums.push_back(std::make_unique<KVStoreHandler<float>>());
    app0.push_back(std::make_unique<KVServer<float>>(0, cluster.server(i)));
    app0.back()->set_request_handler(std::ref(*sums.back()));
    ASSERT_TRUE(app0.back()->Start().ok());
    assigns.push_back(std::make_unique<KVStoreHandler<int64_t>>(
        KVStoreHandler<int64_t>::Mode::kAssign));
    app1.push_back(std::make_unique<KVServer<int64_t>>(1, cluster.server(i)));
    app1.back()->set_request_handler(std::ref(*assigns.back()));
    ASSERT_TRUE(app1.back()->Start().ok());
  }
  KVWorker<float> w0(0, 0, cluster.worker(0));
  KVWorker<int64_t> w1(1, 0, cluster.worker(0));
  ASSERT_TRUE(w0.Start().ok());
  ASSERT_TRUE(w1.Start().ok());
  SArray<Key> keys = {7, 8, 9, 10};
  for (int i = 1; i <= 3; ++i) {
    int t0 = w0.Push(keys, SArray<float>(4, 1.5f));
    int t1 = w1.Push(keys, SArray<int64_t>(4, i));
    ASSERT_TRUE(w0.Wait(t0, absl::Seconds(10)).ok());
    ASSERT_TRUE(w1.Wait(t1, absl::Seconds(10)).ok());
  }
  SArray<float> o0;
  SArray<int64_t> o1;
  ASSERT_TRUE(w0.Wait(w0.Pull(keys, &o0), absl::Seconds(10)).ok());
  ASSERT_TRUE(w1.Wait(w1.Pull(keys, &o1), absl::Seconds(10)).ok());
  EXPECT_EQ(o0.ToVector(), std::vector<float>(4, 4.5f));
  EXPECT_EQ(o1.ToVector(), std::vector<int64_t>(4, 3));
  EXPECT_TRUE(cluster.Finish().ok());
}

}  // namespace
}  // namespace petrel
