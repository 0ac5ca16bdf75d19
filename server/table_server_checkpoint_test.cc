// TableServer::SaveCheckpoint / LoadCheckpoint: round trips with optimizer
// state, resharding onto another server count, refusals.
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "base/config_file.h"
#include "base/startup_progress.h"
#include "checkpoint/admission_file.h"
#include "checkpoint/checkpoint_dir.h"
#include "server/table_server.h"

namespace petrel {
namespace {

using ::testing::HasSubstr;

constexpr int kVirtualNodes = 32;

// Directories made by TempDir, removed when the tests end.
std::vector<std::string>& TempDirs() {
  static auto* dirs = new std::vector<std::string>();
  return *dirs;
}

class RemoveTempDirs : public ::testing::Environment {
 public:
  void TearDown() override {
    for (const std::string& dir : TempDirs()) {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  }
};
const auto* const kRemoveTempDirs =
    ::testing::AddGlobalTestEnvironment(new RemoveTempDirs);

std::string TempDir() {
  std::string pattern = ::testing::TempDir() + "table_server_ckpt.XXXXXX";
  char* made = ::mkdtemp(pattern.data());
  EXPECT_NE(made, nullptr);
  TempDirs().push_back(pattern);
  return pattern;
}

pb::JobConfig Job(const std::string& text) {
  pb::JobConfig job;
  absl::Status s = ParseTextProto(text, "job", &job);
  EXPECT_TRUE(s.ok()) << s;
  return job;
}

// FTRL (sparse, dim 1), Adagrad (sparse, dim 4, random init), Adam (dense).
const char kJob[] = R"(
  tables { id: 0 optimizer { kind: KIND_FTRL ftrl_l1: 0.01 ftrl_l2: 0.1 } }
  tables { id: 3 dim: 4
           initializer { kind: KIND_NORMAL scale: 0.1 seed: 5 }
           optimizer { kind: KIND_ADAGRAD learning_rate: 0.1
                       initial_accumulator: 0.1 } }
  tables { id: 4 dim: 2 dense: true num_keys: 300
           optimizer { kind: KIND_ADAM } }
)";

std::unique_ptr<TableServer> MakeServer(const pb::JobConfig& job) {
  TableServerOptions options;
  options.num_threads = 1;
  options.num_shards = 3;
  auto server = TableServer::Create(job, 1, nullptr, options);
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? *std::move(server) : nullptr;
}

KeyRangeMap Ranges(int servers) {
  auto ranges = KeyRangeMap::Uniform(servers, kVirtualNodes);
  EXPECT_TRUE(ranges.ok());
  return *ranges;
}

// Every stored row of a table: key -> its stride floats.
using Rows = std::map<uint64_t, std::vector<float>>;

Rows RowsOf(const Table& table) {
  Rows rows;
  table.ForEachStoredRow([&](uint64_t key, const float* row) {
    rows[key].assign(row, row + table.stride());
  });
  return rows;
}

// The same floats, bit for bit.
bool BitIdentical(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() &&
         std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Pushes `rounds` rounds of random gradients for `num_keys` sparse keys
// and every dense key to the servers owning them under `ranges`.
void Train(const std::vector<TableServer*>& servers, const KeyRangeMap& ranges,
           int num_keys, int rounds, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> grad(0.0f, 1.0f);
  std::vector<uint64_t> sparse(num_keys);
  for (int i = 0; i < num_keys; ++i) sparse[i] = rng();
  std::vector<uint64_t> dense(300);
  for (uint64_t k = 0; k < dense.size(); ++k) dense[k] = k;
  for (int round = 0; round < rounds; ++round) {
    for (const auto& [id, keys] :
         std::vector<std::pair<int, const std::vector<uint64_t>*>>{
             {0, &sparse}, {3, &sparse}, {4, &dense}}) {
      for (uint64_t key : *keys) {
        Table* t = servers[ranges.OwnerOf(key)]->mutable_table(id);
        std::vector<float> g(t->dim());
        for (float& x : g) x = grad(rng);
        ASSERT_TRUE(t->Push({key}, g).ok());
      }
    }
  }
}

// Saves every server into checkpoint `id` under `root` with a manifest;
// returns the checkpoint's directory.
std::string SaveAll(const std::vector<TableServer*>& servers,
                    const KeyRangeMap& ranges, const std::string& root,
                    uint64_t id) {
  auto dir = CreateCheckpointDir(root, id);
  EXPECT_TRUE(dir.ok()) << dir.status();
  pb::CheckpointManifest manifest;
  manifest.set_format_version(kCheckpointFormatVersion);
  manifest.set_id(id);
  manifest.set_num_servers(static_cast<int>(servers.size()));
  for (const pb::CheckpointTable& t : servers[0]->CheckpointTables()) {
    *manifest.add_tables() = t;
  }
  for (uint64_t b : ranges.begins()) manifest.add_range_begins(b);
  for (int32_t o : ranges.owners()) manifest.add_range_owners(o);
  for (size_t rank = 0; rank < servers.size(); ++rank) {
    auto files =
        servers[rank]->SaveCheckpoint(*dir, ranges, static_cast<int>(rank));
    EXPECT_TRUE(files.ok()) << files.status();
    for (const pb::CheckpointFile& f : *files) *manifest.add_files() = f;
  }
  EXPECT_TRUE(WriteManifest(*dir, manifest).ok());
  return *dir;
}

absl::Status LoadInto(TableServer& server, const std::string& dir,
                      const KeyRangeMap& ranges, int rank, bool with_state) {
  auto manifest = ReadManifest(dir);
  if (!manifest.ok()) return manifest.status();
  return server.LoadCheckpoint(dir, *manifest, ranges, rank, with_state);
}

TEST(TableServerCheckpointTest, CheckpointTablesDescribeTheJob) {
  auto server = MakeServer(Job(kJob));
  const auto tables = server->CheckpointTables();
  ASSERT_EQ(tables.size(), 3u);
  EXPECT_EQ(tables[0].id(), 0);
  EXPECT_EQ(tables[0].optimizer(), pb::OptimizerProto::KIND_FTRL);
  EXPECT_EQ(tables[0].stride(), server->table(0)->stride());
  EXPECT_EQ(tables[1].id(), 3);
  EXPECT_EQ(tables[1].dim(), 4);
  EXPECT_EQ(tables[1].optimizer(), pb::OptimizerProto::KIND_ADAGRAD);
  EXPECT_EQ(tables[2].id(), 4);
  EXPECT_TRUE(tables[2].dense());
  EXPECT_EQ(tables[2].num_keys(), 300u);
  EXPECT_EQ(tables[2].optimizer(), pb::OptimizerProto::KIND_ADAM);
}

TEST(TableServerCheckpointTest, RoundTripKeepsRowsAndTheNextPushes) {
  const pb::JobConfig job = Job(kJob);
  const KeyRangeMap ranges = Ranges(1);
  auto original = MakeServer(job);
  Train({original.get()}, ranges, 2000, 3, 1);
  const std::string dir = SaveAll({original.get()}, ranges, TempDir(), 1);

  auto restored = MakeServer(job);
  ASSERT_TRUE(LoadInto(*restored, dir, ranges, 0, true).ok());
  for (int id : {0, 3, 4}) {
    const Rows want = RowsOf(*original->table(id));
    const Rows got = RowsOf(*restored->table(id));
    ASSERT_EQ(got.size(), want.size()) << "table " << id;
    for (const auto& [key, row] : want) {
      ASSERT_TRUE(BitIdentical(got.at(key), row))
          << "table " << id << " key " << key;
    }
  }
  // The same pushes (same seed: the same keys and gradients) give the same
  // rows: the optimizer state came back too.
  Train({original.get()}, ranges, 2000, 2, 2);
  Train({restored.get()}, ranges, 2000, 2, 2);
  for (int id : {0, 3, 4}) {
    const Rows want = RowsOf(*original->table(id));
    for (const auto& [key, row] : RowsOf(*restored->table(id))) {
      ASSERT_TRUE(BitIdentical(want.at(key), row))
          << "table " << id << " key " << key;
    }
  }
}

// A signal (StartupProgress::Cancel) stops the load before the next chunk,
// with Cancelled naming the load; an uncancelled load ends its step.
TEST(TableServerCheckpointTest, ACancelledLoadStopsNamingTheCheckpoint) {
  const pb::JobConfig job = Job(kJob);
  const KeyRangeMap ranges = Ranges(1);
  auto original = MakeServer(job);
  Train({original.get()}, ranges, 2000, 1, 1);
  const std::string dir = SaveAll({original.get()}, ranges, TempDir(), 1);

  StartupProgress progress;
  TableServerOptions options;
  options.num_threads = 1;
  options.num_shards = 3;
  options.progress = &progress;
  auto loaded = TableServer::Create(job, 1, nullptr, options);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ASSERT_TRUE(LoadInto(**loaded, dir, ranges, 0, true).ok());
  EXPECT_EQ(progress.Describe(), "");
  EXPECT_EQ(RowsOf(*(*loaded)->table(0)).size(), 2000u);

  auto cancelled = TableServer::Create(job, 1, nullptr, options);
  ASSERT_TRUE(cancelled.ok()) << cancelled.status();
  progress.Cancel("SIGTERM received");
  const absl::Status s = LoadInto(**cancelled, dir, ranges, 0, true);
  EXPECT_TRUE(absl::IsCancelled(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("SIGTERM received while loading "
                                     "checkpoint " +
                                     dir));
  EXPECT_TRUE(RowsOf(*(*cancelled)->table(0)).empty());
}

// A key seen twice before the checkpoint is admitted at its third
// sighting after it, on the same servers or on fewer; a checkpoint without
// admission files (as before they existed) starts the counts over.
TEST(TableServerCheckpointTest, KeepsTheAdmissionCounters) {
  const pb::JobConfig job =
      Job("tables { id: 0 admit_after: 3 admission_counters: 4096 "
          "optimizer { kind: KIND_SGD } }");
  for (int servers : {1, 2}) {
    SCOPED_TRACE(servers);
    const KeyRangeMap ranges = Ranges(servers);
    std::vector<std::unique_ptr<TableServer>> owned;
    std::vector<TableServer*> all;
    for (int r = 0; r < servers; ++r) {
      owned.push_back(MakeServer(job));
      all.push_back(owned.back().get());
    }
    std::vector<uint64_t> keys = {11, 12, 13, 14, 15, 16};
    for (int sighting = 0; sighting < 2; ++sighting) {
      for (uint64_t key : keys) {
        Table* t = all[ranges.OwnerOf(key)]->mutable_table(0);
        ASSERT_TRUE(t->Push({key}, std::vector<float>{1.0f}).ok());
        ASSERT_EQ(t->Find(key), nullptr);
      }
    }
    const std::string dir = SaveAll(all, ranges, TempDir(), 1);
    auto restored = MakeServer(job);
    ASSERT_TRUE(LoadInto(*restored, dir, Ranges(1), 0, true).ok());
    Table* t = restored->mutable_table(0);
    ASSERT_TRUE(t->Push(keys, std::vector<float>(keys.size(), 1.0f)).ok());
    EXPECT_EQ(t->num_rows(), keys.size());
    EXPECT_EQ(t->admitted(), keys.size());

    for (int r = 0; r < servers; ++r) {
      std::filesystem::remove(dir + "/" + AdmissionFileName(0, r));
    }
    auto fresh = MakeServer(job);
    ASSERT_TRUE(LoadInto(*fresh, dir, Ranges(1), 0, true).ok());
    Table* f = fresh->mutable_table(0);
    ASSERT_TRUE(f->Push(keys, std::vector<float>(keys.size(), 1.0f)).ok());
    EXPECT_EQ(f->num_rows(), 0u);
  }
}

struct Reshard {
  int from;
  int to;
};

class TableServerReshardTest : public ::testing::TestWithParam<Reshard> {};

TEST_P(TableServerReshardTest, EveryRowLandsOnItsNewOwnerUnchanged) {
  const pb::JobConfig job = Job(kJob);
  const int s_old = GetParam().from;
  const int s_new = GetParam().to;
  const KeyRangeMap old_ranges = Ranges(s_old);
  const KeyRangeMap new_ranges = Ranges(s_new);
  std::vector<std::unique_ptr<TableServer>> old_servers;
  std::vector<TableServer*> old_ptrs;
  for (int i = 0; i < s_old; ++i) {
    old_servers.push_back(MakeServer(job));
    old_ptrs.push_back(old_servers.back().get());
  }
  Train(old_ptrs, old_ranges, 3000, 2, 3);
  const std::string dir = SaveAll(old_ptrs, old_ranges, TempDir(), 1);

  std::vector<std::unique_ptr<TableServer>> new_servers;
  for (int i = 0; i < s_new; ++i) {
    new_servers.push_back(MakeServer(job));
    ASSERT_TRUE(LoadInto(*new_servers.back(), dir, new_ranges, i, true).ok());
  }
  for (int id : {0, 3, 4}) {
    std::vector<Rows> now;
    for (auto& s : new_servers) now.push_back(RowsOf(*s->table(id)));
    // What each key's old owner had is what its new owner has.
    size_t old_rows = 0;
    for (int i = 0; i < s_old; ++i) {
      for (const auto& [key, row] : RowsOf(*old_servers[i]->table(id))) {
        if (old_ranges.OwnerOf(key) != i) continue;  // dense: not its key
        ++old_rows;
        const int owner = new_ranges.OwnerOf(key);
        ASSERT_TRUE(now[owner].count(key) == 1 &&
                    BitIdentical(now[owner].at(key), row))
            << "table " << id << " key " << key << " server " << owner;
      }
    }
    if (!new_servers[0]->table(id)->dense()) {
      size_t new_rows = 0;
      for (auto& s : new_servers) new_rows += s->table(id)->num_rows();
      EXPECT_EQ(new_rows, old_rows) << "table " << id;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Counts, TableServerReshardTest,
                         ::testing::Values(Reshard{2, 3}, Reshard{3, 1},
                                           Reshard{2, 2}),
                         [](const auto& info) {
                           return absl::StrCat(info.param.from, "To",
                                               info.param.to);
                         });

TEST(TableServerCheckpointTest, WeightsOnlyStartsAFreshOptimizerState) {
  const pb::JobConfig job = Job(kJob);
  const KeyRangeMap ranges = Ranges(1);
  auto original = MakeServer(job);
  Train({original.get()}, ranges, 500, 2, 4);
  const std::string dir = SaveAll({original.get()}, ranges, TempDir(), 1);
  auto warm = MakeServer(job);
  ASSERT_TRUE(LoadInto(*warm, dir, ranges, 0, false).ok());
  const Rows want = RowsOf(*original->table(3));
  const Rows got = RowsOf(*warm->table(3));
  ASSERT_EQ(got.size(), want.size());
  for (const auto& [key, row] : want) {
    const std::vector<float>& r = got.at(key);
    for (int j = 0; j < 4; ++j) ASSERT_EQ(r[j], row[j]) << key;
    // Adagrad's accumulators start at initial_accumulator again.
    for (size_t j = 4; j < r.size(); ++j) ASSERT_EQ(r[j], 0.1f) << key;
  }

  // A warm start may change optimizers; a resume may not.
  pb::JobConfig sgd = job;
  sgd.mutable_tables(1)->mutable_optimizer()->set_kind(
      pb::OptimizerProto::KIND_SGD);
  auto changed = MakeServer(sgd);
  EXPECT_TRUE(LoadInto(*changed, dir, ranges, 0, false).ok());
  EXPECT_EQ(changed->table(3)->num_rows(), want.size());
  auto resumed = MakeServer(sgd);
  absl::Status s = LoadInto(*resumed, dir, ranges, 0, true);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("table 3: checkpoint optimizer"));
}

TEST(TableServerCheckpointTest, IncompatibleDimsAreRefusedBeforeLoading) {
  const pb::JobConfig job = Job(kJob);
  const KeyRangeMap ranges = Ranges(1);
  auto original = MakeServer(job);
  Train({original.get()}, ranges, 100, 1, 5);
  const std::string dir = SaveAll({original.get()}, ranges, TempDir(), 1);
  pb::JobConfig other = job;
  other.mutable_tables(1)->set_dim(8);
  auto server = MakeServer(other);
  absl::Status s = LoadInto(*server, dir, ranges, 0, true);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("table 3: checkpoint dim 4, job dim 8"));
  EXPECT_THAT(s.message(), HasSubstr(dir));
  EXPECT_EQ(server->table(0)->num_rows(), 0u);  // nothing loaded
}

TEST(TableServerCheckpointTest, CorruptedFileIsDataLossNamingIt) {
  const pb::JobConfig job = Job(kJob);
  const KeyRangeMap ranges = Ranges(1);
  auto original = MakeServer(job);
  Train({original.get()}, ranges, 100, 1, 6);
  const std::string dir = SaveAll({original.get()}, ranges, TempDir(), 1);
  const std::string file = dir + "/" + TableFileName(3, 0);
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    f.put('\x7f');
  }
  auto server = MakeServer(job);
  absl::Status s = LoadInto(*server, dir, ranges, 0, true);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr(file));
}

// With the key-range map unchanged a server reads only its own files (the
// others hold none of its keys): a damaged file of server 1 stops server 1,
// and a server of a new map whose ranges meet server 1's, but no other.
TEST(TableServerCheckpointTest, AServerReadsOnlyFilesThatMayHoldItsKeys) {
  const pb::JobConfig job = Job(kJob);
  const KeyRangeMap ranges = Ranges(2);
  std::vector<std::unique_ptr<TableServer>> old_servers;
  for (int i = 0; i < 2; ++i) old_servers.push_back(MakeServer(job));
  Train({old_servers[0].get(), old_servers[1].get()}, ranges, 500, 1, 7);
  const std::string dir = SaveAll({old_servers[0].get(), old_servers[1].get()},
                                  ranges, TempDir(), 1);
  const std::string file = dir + "/" + TableFileName(0, 1);
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    f.put('\x7f');
  }
  auto server0 = MakeServer(job);
  ASSERT_TRUE(LoadInto(*server0, dir, ranges, 0, true).ok());
  EXPECT_EQ(RowsOf(*server0->table(0)), RowsOf(*old_servers[0]->table(0)));
  auto server1 = MakeServer(job);
  EXPECT_EQ(LoadInto(*server1, dir, ranges, 1, true).code(),
            absl::StatusCode::kDataLoss);
  // Onto 3 servers (96 ranges over 2's 64): server 0's ranges all lie in
  // old server 0's, server 1's meet old server 1's.
  auto new0 = MakeServer(job);
  EXPECT_TRUE(LoadInto(*new0, dir, Ranges(3), 0, true).ok());
  auto new1 = MakeServer(job);
  EXPECT_EQ(LoadInto(*new1, dir, Ranges(3), 1, true).code(),
            absl::StatusCode::kDataLoss);
}

TEST(TableServerCheckpointTest, UnwritableDirFailsNamingThePath) {
  auto server = MakeServer(Job(kJob));
  const std::string root = TempDir();
  std::ofstream(root + "/plain") << "x";
  auto files = server->SaveCheckpoint(root + "/plain", Ranges(1), 0);
  EXPECT_EQ(files.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(files.status().message(), HasSubstr(root + "/plain/table-"));
}

}  // namespace
}  // namespace petrel
