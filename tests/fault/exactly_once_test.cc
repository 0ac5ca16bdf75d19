// Exactly-once push under message faults: a LocalCluster whose servers and
// workers send through FaultVans that drop, duplicate, delay and reorder
// data messages in both directions. Customers resend unanswered requests and
// servers recognise resent pushes, so after every push completed the stored
// sums must be exact: no push lost, none applied twice. Pushes go out in
// parts (KVWorker::set_max_push_part_bytes), so a request completes only
// when every part was answered.
#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"

#include "kv/kv_server.h"
#include "kv/kv_worker.h"
#include "tests/harness/local_cluster.h"
#include "van/testing/fault_van.h"

namespace petrel {
namespace {

constexpr int kNumServers = 2;
constexpr int kNumWorkers = 2;
constexpr int kNumKeys = 100;
constexpr int kKeysPerPush = 10;
constexpr int kValsPerKey = 2;
constexpr size_t kInFlight = 8;
constexpr absl::Duration kTimeout = absl::Seconds(30);

// The value worker `w` pushes for `key` in round `r`: small integers, so
// float sums are exact, and different per key, so a push applied to the
// wrong key shows.
float PushValue(int w, int r, Key key) {
  return static_cast<float>((w + 1) * (1 + r % 3) + static_cast<int>(key % 11));
}

// Keys of round `r`: kKeysPerPush distinct keys out of 0..kNumKeys-1.
SArray<Key> RoundKeys(int r) {
  SArray<Key> keys(kKeysPerPush);
  for (int j = 0; j < kKeysPerPush; ++j) {
    keys[j] = static_cast<Key>((r * 7 + j * 10) % kNumKeys);
  }
  return keys;
}

class ExactlyOnceTest : public ::testing::Test {
 protected:
  // Starts the cluster with `faults` on every server and worker van (the
  // scheduler's is left alone), then the KV apps with resends every 30 ms.
  void StartCluster(const FaultOptions& faults) {
    LocalClusterOptions o;
    o.num_servers = kNumServers;
    o.num_workers = kNumWorkers;
    o.van_factory = [this, faults](pb::Role role, int rank, VanOptions vo,
                                   MetricsRegistry* metrics) {
      std::unique_ptr<Van> van =
          std::make_unique<LoopbackVan>(&network_, vo, metrics);
      if (role == pb::ROLE_SCHEDULER) return van;
      FaultOptions f = faults;
      f.seed = static_cast<uint64_t>(role) * 1000 + static_cast<uint64_t>(rank);
      auto fault = std::make_unique<FaultVan>(std::move(van), f);
      (role == pb::ROLE_SERVER ? server_vans_ : worker_vans_)
          .push_back(fault.get());
      return std::unique_ptr<Van>(std::move(fault));
    };
    cluster_ = std::make_unique<LocalCluster>(o);
    ASSERT_TRUE(cluster_->Start().ok());
    CustomerOptions co;
    co.resend_timeout = absl::Milliseconds(30);
    co.max_resends = 100;
    co.max_resend_interval = co.resend_timeout;  // no backoff
    for (int i = 0; i < kNumServers; ++i) {
      handlers_.push_back(std::make_unique<KVStoreHandler<float>>());
      servers_.push_back(
          std::make_unique<KVServer<float>>(0, cluster_->server(i), co));
      // Records each push the handler sees before applying it.
      servers_.back()->set_request_handler(
          [this, i, store = handlers_.back().get()](const KVMeta& meta,
                                                    const KVPairs<float>& data,
                                                    KVServer<float>* server) {
            if (meta.push) RecordPush(i, meta);
            (*store)(meta, data, server);
          },
          /*accepts_key_slices=*/true);
      ASSERT_TRUE(servers_.back()->Start().ok());
    }
    for (int i = 0; i < kNumWorkers; ++i) {
      workers_.push_back(
          std::make_unique<KVWorker<float>>(0, 0, cluster_->worker(i), co));
      // Every push reaches each server in parts, each sequenced, resent
      // and deduplicated alone: worker 0 sends each key's two values as two
      // slices, worker 1 two keys per message.
      if (i == 0) {
        workers_.back()->set_max_push_part_bytes(sizeof(float));
        workers_.back()->set_split_large_keys(true);
      } else {
        workers_.back()->set_max_push_part_bytes(2 * kValsPerKey *
                                                 sizeof(float));
      }
      ASSERT_TRUE(workers_.back()->Start().ok());
    }
  }

  // Worker `w` pushes `rounds` times with up to kInFlight requests open,
  // waits for all, passes the worker barrier, then pulls every key and
  // checks the sums of all workers' pushes.
  void RunWorker(int w, int rounds) {
    KVWorker<float>& kv = *workers_[w];
    std::deque<int> open;
    for (int r = 0; r < rounds; ++r) {
      SArray<float> vals(kKeysPerPush * kValsPerKey);
      SArray<Key> keys = RoundKeys(r);
      for (int j = 0; j < kKeysPerPush; ++j) {
        vals[j * kValsPerKey] = PushValue(w, r, keys[j]);
        vals[j * kValsPerKey + 1] = 2 * PushValue(w, r, keys[j]);
      }
      open.push_back(kv.Push(keys, vals));
      if (open.size() >= kInFlight) {
        ASSERT_TRUE(kv.Wait(open.front(), kTimeout).ok()) << "round " << r;
        open.pop_front();
      }
    }
    for (int ts : open) ASSERT_TRUE(kv.Wait(ts, kTimeout).ok());
    ASSERT_TRUE(cluster_->worker(w)->Barrier(kWorkerGroup, kTimeout).ok());

    SArray<Key> keys(kNumKeys);
    for (int k = 0; k < kNumKeys; ++k) keys[k] = static_cast<Key>(k);
    SArray<float> got;
    ASSERT_TRUE(kv.Wait(kv.Pull(keys, &got), kTimeout).ok());
    std::vector<float> want = ExpectedSums(rounds);
    EXPECT_EQ(got.ToVector(), want) << "worker " << w;
  }

  static std::vector<float> ExpectedSums(int rounds) {
    std::vector<float> sums(kNumKeys * kValsPerKey, 0);
    for (int w = 0; w < kNumWorkers; ++w) {
      for (int r = 0; r < rounds; ++r) {
        SArray<Key> keys = RoundKeys(r);
        for (int j = 0; j < kKeysPerPush; ++j) {
          sums[keys[j] * kValsPerKey] += PushValue(w, r, keys[j]);
          sums[keys[j] * kValsPerKey + 1] += 2 * PushValue(w, r, keys[j]);
        }
      }
    }
    return sums;
  }

  void RunAllWorkers(int rounds) {
    std::vector<std::thread> threads;
    for (int w = 0; w < kNumWorkers; ++w) {
      threads.emplace_back([this, w, rounds] { RunWorker(w, rounds); });
    }
    for (std::thread& t : threads) t.join();
  }

  static FaultStats Total(const std::vector<FaultVan*>& vans) {
    FaultStats total;
    for (FaultVan* v : vans) {
      FaultStats s = v->stats();
      total.sent += s.sent;
      total.dropped += s.dropped;
      total.duplicated += s.duplicated;
      total.delayed += s.delayed;
      total.reordered += s.reordered;
    }
    return total;
  }

  // Each worker issues its pushes from one thread, so their sequence
  // numbers follow (timestamp, part); every server must handle them in that
  // order however the faults reorder their arrival.
  void RecordPush(int server, const KVMeta& meta) {
    absl::MutexLock lock(&order_mu_);
    auto key = std::make_tuple(server, meta.sender, meta.customer_id);
    auto order = std::make_pair(meta.timestamp, meta.part);
    auto it = last_push_.find(key);
    if (it != last_push_.end() && order <= it->second) ++out_of_order_;
    last_push_[key] = order;
  }
  int out_of_order() {
    absl::MutexLock lock(&order_mu_);
    return out_of_order_;
  }

  void TearDown() override {
    if (cluster_ != nullptr) {
      EXPECT_TRUE(cluster_->Finish().ok());
    }
    workers_.clear();
    servers_.clear();
    cluster_.reset();
  }

  LoopbackNetwork network_;
  // Owned by the cluster's Postoffices.
  std::vector<FaultVan*> server_vans_;
  std::vector<FaultVan*> worker_vans_;
  std::unique_ptr<LocalCluster> cluster_;
  std::vector<std::unique_ptr<KVStoreHandler<float>>> handlers_;
  absl::Mutex order_mu_;
  // (server, sender, customer) -> the last push's (timestamp, part).
  std::map<std::tuple<int, int, int>, std::pair<int, int>> last_push_
      ABSL_GUARDED_BY(order_mu_);
  int out_of_order_ ABSL_GUARDED_BY(order_mu_) = 0;
  std::vector<std::unique_ptr<KVServer<float>>> servers_;
  std::vector<std::unique_ptr<KVWorker<float>>> workers_;
};

TEST_F(ExactlyOnceTest, DropsAndDuplicatesKeepSumsExact) {
  FaultOptions f;
  f.drop_probability = 0.05;
  f.duplicate_probability = 0.05;
  StartCluster(f);
  if (HasFatalFailure()) return;
  RunAllWorkers(/*rounds=*/300);
  // Requests and responses both met faults.
  FaultStats requests = Total(worker_vans_);
  FaultStats responses = Total(server_vans_);
  EXPECT_GT(requests.dropped, 0);
  EXPECT_GT(requests.duplicated, 0);
  EXPECT_GT(responses.dropped, 0);
  EXPECT_GT(responses.duplicated, 0);
  EXPECT_EQ(out_of_order(), 0);
}

TEST_F(ExactlyOnceTest, DelaysAndReorderingKeepSumsExact) {
  FaultOptions f;
  f.delay_probability = 0.1;
  f.max_delay = absl::Milliseconds(50);  // beyond resend_timeout: resends
  f.reorder_probability = 0.1;
  f.duplicate_probability = 0.02;
  StartCluster(f);
  if (HasFatalFailure()) return;
  RunAllWorkers(/*rounds=*/200);
  FaultStats all = Total(worker_vans_);
  FaultStats responses = Total(server_vans_);
  EXPECT_GT(all.delayed + responses.delayed, 0);
  EXPECT_GT(all.reordered + responses.reordered, 0);
  EXPECT_EQ(out_of_order(), 0);
}

}  // namespace
}  // namespace petrel
