// Checkpoints of replicated training tables (docs/checkpoints.md,
// "Replicated servers"): 3 servers keep 2 copies of each key range. Each
// server saves only the ranges it leads (its primaries), so every row is in
// the checkpoint once, optimizer state included; a server restoring loads
// every range it holds a copy of (ReplicaMap::HeldBy), so its backups hold
// the rows too. Restored into 3 servers with 2 copies, into 1 copy, and
// after a failover (the dead server's ranges saved by their successor),
// every row comes back bit-identical (weights and optimizer state), and
// the admission counters with it.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

#include "base/config_file.h"
#include "checkpoint/checkpoint_dir.h"
#include "cluster/replica_map.h"
#include "kv/kv_worker.h"
#include "server/table_server.h"
#include "tests/harness/local_cluster.h"

namespace petrel {
namespace {

constexpr absl::Duration kTimeout = absl::Seconds(20);
constexpr int kServers = 3;

// Whole stored rows (weights and optimizer state) by key.
using Rows = std::map<uint64_t, std::vector<float>>;

Rows StoredRows(const Table& table) {
  Rows rows;
  const size_t stride = static_cast<size_t>(table.stride());
  table.ForEachStoredBlock(
      [&](const uint64_t* keys, const float* values, size_t n) {
        for (size_t i = 0; i < n; ++i) {
          rows[keys[i]].assign(values + i * stride, values + (i + 1) * stride);
        }
      });
  return rows;
}

pb::JobConfig Job() {
  pb::JobConfig job;
  EXPECT_TRUE(ParseTextProto(R"(
    tables { id: 0 dim: 1 admit_after: 2
             optimizer { kind: KIND_FTRL ftrl_alpha: 0.1 ftrl_beta: 1.0
                         ftrl_l1: 0.5 ftrl_l2: 5.0 } }
    tables { id: 1 dim: 4 optimizer { kind: KIND_ADAGRAD learning_rate: 0.1 } }
    consistency { max_delay: -1 }
  )",
                             "job", &job)
                  .ok());
  return job;
}

class ReplicatedCheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(::testing::TempDir(), "replicated_ckpt_", getpid());
    std::system(("rm -rf " + dir_ + " && mkdir -p " + dir_).c_str());
    LocalClusterOptions o;
    o.num_servers = kServers;
    o.num_workers = 1;
    o.scheduler.replicas = 2;
    cluster_ = std::make_unique<LocalCluster>(o);
    ASSERT_TRUE(cluster_->Start().ok());
    for (int i = 0; i < kServers; ++i) {
      auto made = TableServer::Create(Job(), 1, nullptr);
      ASSERT_TRUE(made.ok()) << made.status();
      tables_.push_back(*std::move(made));
      ASSERT_TRUE(tables_.back()->Start().ok());
      kv_servers_.push_back(
          std::make_unique<KVServer<float>>(0, cluster_->server(i)));
      kv_servers_.back()->set_request_handler(tables_.back()->handler());
      ASSERT_TRUE(kv_servers_.back()->Start().ok());
    }
    KVWorker<float> kv(0, 0, cluster_->worker(0));
    ASSERT_TRUE(kv.Start().ok());
    std::mt19937_64 rng(11);
    std::normal_distribution<float> grad(0, 1);
    for (int step = 0; step < 40; ++step) {
      for (int id : {0, 1}) {
        const int dim = id == 0 ? 1 : 4;
        SArray<Key> keys(300);
        for (Key& k : keys) k = rng() % 3000;
        SArray<float> g(keys.size() * dim);
        for (float& v : g) v = grad(rng);
        KVRequestOptions opts;
        opts.table_id = id;
        ASSERT_TRUE(kv.Wait(kv.Push(keys, g, opts), kTimeout).ok());
      }
    }
    map_ = cluster_->server(0)->replica_map();
    ASSERT_EQ(map_->replicas(), 2);
  }

  void TearDown() override {
    if (cluster_ != nullptr) {
      EXPECT_TRUE(cluster_->Finish().ok());
    }
    std::system(("rm -rf " + dir_).c_str());
  }

  // The rows every key has on its primary under `map`, per table.
  std::map<int, Rows> Truth(const ReplicaMap& map) {
    std::map<int, Rows> truth;
    for (int id : {0, 1}) {
      for (int rank = 0; rank < kServers; ++rank) {
        if (map.dead(rank)) continue;
        for (auto& [key, row] : StoredRows(*tables_[rank]->table(id))) {
          if (map.ranges().OwnerOf(key) == rank) truth[id][key] = row;
        }
      }
    }
    return truth;
  }

  // Saves every live server of `map` into checkpoint `id` as the
  // coordinator does (each with the primaries of `map`); the manifest.
  pb::CheckpointManifest Save(const ReplicaMap& map, uint64_t id) {
    absl::StatusOr<std::string> path = CreateCheckpointDir(dir_, id);
    EXPECT_TRUE(path.ok()) << path.status();
    pb::CheckpointManifest manifest;
    for (int rank = 0; rank < kServers; ++rank) {
      if (map.dead(rank)) continue;
      auto files = tables_[rank]->SaveCheckpoint(*path, map.ranges(), rank);
      EXPECT_TRUE(files.ok()) << files.status();
      if (!files.ok()) continue;
      for (pb::CheckpointFile& f : *files) *manifest.add_files() = f;
    }
    for (const pb::CheckpointTable& t : tables_[0]->CheckpointTables()) {
      *manifest.add_tables() = t;
    }
    manifest.set_format_version(kCheckpointFormatVersion);
    manifest.set_id(id);
    *manifest.mutable_job() = Job();
    manifest.set_num_servers(kServers);
    for (uint64_t b : map.ranges().begins()) manifest.add_range_begins(b);
    for (int32_t o : map.ranges().owners()) manifest.add_range_owners(o);
    EXPECT_TRUE(WriteManifest(*path, manifest).ok());
    dirs_[id] = *path;
    return manifest;
  }

  // Loads checkpoint `id` into `servers` fresh servers holding `replicas`
  // copies; returns their tables.
  std::vector<std::unique_ptr<TableServer>> Restore(
      uint64_t id, const pb::CheckpointManifest& manifest, int servers,
      int replicas) {
    std::vector<std::unique_ptr<TableServer>> out;
    const ReplicaMap map =
        ReplicaMap::Initial(KeyRangeMap::Uniform(servers, 32).value(), replicas)
            .value();
    for (int rank = 0; rank < servers; ++rank) {
      auto made = TableServer::Create(Job(), 1, nullptr);
      EXPECT_TRUE(made.ok()) << made.status();
      absl::Status s = (*made)->LoadCheckpoint(dirs_[id], manifest,
                                               map.HeldBy(rank), rank, true);
      EXPECT_TRUE(s.ok()) << s;
      out.push_back(*std::move(made));
    }
    return out;
  }

  // Every server of `restored` (2 copies when `replicas` is 2, of a map of
  // restored.size() servers) holds exactly the rows of the ranges it holds
  // a copy of, each bit-identical to `truth`.
  void ExpectRestored(const std::vector<std::unique_ptr<TableServer>>& restored,
                      int replicas, const std::map<int, Rows>& truth) {
    const int n = static_cast<int>(restored.size());
    const ReplicaMap map =
        ReplicaMap::Initial(KeyRangeMap::Uniform(n, 32).value(), replicas)
            .value();
    for (int id : {0, 1}) {
      const Rows& all = truth.at(id);
      ASSERT_GT(all.size(), 1000u);
      size_t copies = 0;
      for (int rank = 0; rank < n; ++rank) {
        const KeyRangeMap held = map.HeldBy(rank);
        const Rows rows = StoredRows(*restored[rank]->table(id));
        size_t expected = 0;
        for (const auto& [key, row] : all) {
          if (held.OwnerOf(key) != rank) continue;
          ++expected;
          auto it = rows.find(key);
          ASSERT_NE(it, rows.end())
              << "table " << id << " key " << key << " rank " << rank;
          ASSERT_EQ(it->second.size(), row.size());
          ASSERT_EQ(std::memcmp(it->second.data(), row.data(), row.size() * 4),
                    0)
              << "table " << id << " key " << key << " rank " << rank;
        }
        EXPECT_EQ(rows.size(), expected) << "table " << id << " rank " << rank;
        copies += rows.size();
      }
      EXPECT_EQ(copies, all.size() * replicas) << "table " << id;
    }
    // The admission counters came back: a key the original admitted (it
    // has a row) is admitted at once by the restored table's next push.
    const std::vector<uint16_t> counters =
        restored[0]->table(0)->AdmissionCounters();
    EXPECT_GT(std::count_if(counters.begin(), counters.end(),
                            [](uint16_t c) { return c > 0; }),
              0);
  }

  std::string dir_;
  std::unique_ptr<LocalCluster> cluster_;
  std::vector<std::unique_ptr<TableServer>> tables_;
  std::vector<std::unique_ptr<KVServer<float>>> kv_servers_;
  std::optional<ReplicaMap> map_;
  std::map<uint64_t, std::string> dirs_;
};

TEST_F(ReplicatedCheckpointTest, EachRowSavedOnceAndRestoredExactly) {
  const std::map<int, Rows> truth = Truth(*map_);
  // The backups hold the same rows as the primaries (so saving only the
  // primaries loses nothing).
  for (int id : {0, 1}) {
    for (int rank = 0; rank < kServers; ++rank) {
      const KeyRangeMap held = map_->HeldBy(rank);
      for (const auto& [key, row] : StoredRows(*tables_[rank]->table(id))) {
        ASSERT_EQ(held.OwnerOf(key), rank) << key;
        ASSERT_EQ(row, truth.at(id).at(key)) << "table " << id << " " << key;
      }
    }
  }
  const pb::CheckpointManifest manifest = Save(*map_, 1);
  for (int id : {0, 1}) {
    uint64_t rows = 0;
    for (const pb::CheckpointFile& f : manifest.files()) {
      if (f.table_id() == id) rows += f.rows();
    }
    EXPECT_EQ(rows, truth.at(id).size()) << "each row once, table " << id;
  }
  ExpectRestored(Restore(1, manifest, kServers, 2), 2, truth);  // R=2 -> R=2
  ExpectRestored(Restore(1, manifest, kServers, 1), 1, truth);  // R=2 -> R=1
  ExpectRestored(Restore(1, manifest, 2, 2), 2, truth);         // resharded
  // A checkpoint of one copy (R=1) is written the same way (each server its
  // own ranges); into 2 copies on 4 servers.
  ExpectRestored(Restore(1, manifest, 4, 2), 2, truth);
}

TEST_F(ReplicatedCheckpointTest, CheckpointAfterAFailoverRestoresExactly) {
  // Server 1 died: its ranges are led by its successor, which saves them
  // from its copies; server 1 writes nothing.
  const ReplicaMap after = map_->WithoutServer(1).value();
  const std::map<int, Rows> truth = Truth(after);
  EXPECT_EQ(truth.at(0).size(), Truth(*map_).at(0).size());
  EXPECT_EQ(truth.at(1), Truth(*map_).at(1));
  const pb::CheckpointManifest manifest = Save(after, 2);
  for (const pb::CheckpointFile& f : manifest.files()) {
    EXPECT_NE(f.server_rank(), 1) << f.name();
  }
  ExpectRestored(Restore(2, manifest, kServers, 2), 2, truth);
  ExpectRestored(Restore(2, manifest, kServers, 1), 1, truth);
}

}  // namespace
}  // namespace petrel
