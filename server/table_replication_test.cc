// Replicated training tables (docs/failures.md, "Replicated servers"): with
// 2 servers and --replicas=2 each server is the other's backup, so after
// the worker's pushes are acknowledged both hold every row, and the rows
// must be bit-identical: the backup ran the same optimizer updates on the
// forwarded gradients, in the same order per key.
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <vector>

#include "gtest/gtest.h"

#include "base/config_file.h"
#include "kv/kv_worker.h"
#include "server/table_server.h"
#include "tests/harness/local_cluster.h"

namespace petrel {
namespace {

constexpr absl::Duration kTimeout = absl::Seconds(20);

using Rows = std::map<uint64_t, std::vector<float>>;

Rows RowsOf(const Table& table) {
  Rows rows;
  table.ForEachRow([&](uint64_t key, const float* w) {
    rows[key].assign(w, w + table.dim());
  });
  return rows;
}

TEST(TableReplicationTest, BackupRowsAreBitIdenticalToThePrimarys) {
  pb::JobConfig job;
  ASSERT_TRUE(ParseTextProto(R"(
    tables { id: 0 dim: 1 optimizer { kind: KIND_FTRL ftrl_alpha: 0.1
             ftrl_beta: 1.0 ftrl_l1: 0.5 ftrl_l2: 5.0 } }
    tables { id: 1 dim: 4 optimizer { kind: KIND_ADAGRAD learning_rate: 0.1 } }
    consistency { max_delay: -1 }
  )",
                             "job", &job)
                  .ok());
  LocalClusterOptions o;
  o.num_servers = 2;
  o.num_workers = 1;
  o.scheduler.replicas = 2;
  LocalCluster cluster(o);
  ASSERT_TRUE(cluster.Start().ok());
  std::vector<std::unique_ptr<TableServer>> tables;
  std::vector<std::unique_ptr<KVServer<float>>> servers;
  for (int i = 0; i < 2; ++i) {
    auto made = TableServer::Create(job, 1, cluster.server_metrics(i));
    ASSERT_TRUE(made.ok()) << made.status();
    tables.push_back(*std::move(made));
    ASSERT_TRUE(tables.back()->Start().ok());
    servers.push_back(std::make_unique<KVServer<float>>(0, cluster.server(i)));
    servers.back()->set_request_handler(tables.back()->handler());
    ASSERT_TRUE(servers.back()->Start().ok());
  }
  KVWorker<float> kv(0, 0, cluster.worker(0));
  ASSERT_TRUE(kv.Start().ok());
  std::mt19937_64 rng(7);
  std::normal_distribution<float> grad(0, 1);
  for (int step = 0; step < 50; ++step) {
    for (int id : {0, 1}) {
      const int dim = id == 0 ? 1 : 4;
      SArray<Key> keys(300);
      for (Key& k : keys) k = rng() % 2000;
      SArray<float> g(keys.size() * dim);
      for (float& v : g) v = grad(rng);
      KVRequestOptions opts;
      opts.table_id = id;
      ASSERT_TRUE(kv.Wait(kv.Push(keys, g, opts), kTimeout).ok());
    }
  }
  for (int id : {0, 1}) {
    const Rows a = RowsOf(*tables[0]->table(id));
    const Rows b = RowsOf(*tables[1]->table(id));
    ASSERT_GT(a.size(), 1000u);
    ASSERT_EQ(a.size(), b.size()) << "table " << id;
    for (const auto& [key, w] : a) {
      auto it = b.find(key);
      ASSERT_NE(it, b.end()) << "table " << id << " key " << key;
      ASSERT_EQ(std::memcmp(w.data(), it->second.data(), w.size() * 4), 0)
          << "table " << id << " key " << key;
    }
  }
  // Every push's slice for each server went on to the other one.
  double forwarded = 0;
  for (int i = 0; i < 2; ++i) {
    forwarded +=
        cluster.server_metrics(i)
            ->GetCounter("petrel_server_replication_forwarded_total", "")
            ->value();
  }
  EXPECT_EQ(forwarded, 100 * 2);  // 100 pushes, a slice for each server
  EXPECT_TRUE(cluster.Finish().ok());
}

}  // namespace
}  // namespace petrel
