// TableServer::SnapshotRanges / InstallRanges (the range copy to a
// replacement server): rows come across bit for bit with their optimizer
// state and admission counts, only the wanted keys, in any split; bad
// entries are refused before anything is set.
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "base/config_file.h"
#include "server/table_server.h"

namespace petrel {
namespace {

using ::testing::HasSubstr;

// FTRL (sparse), Adagrad (sparse, random init), Adam (dense), and SGD
// with admission.
const char kJob[] = R"(
  tables { id: 0 optimizer { kind: KIND_FTRL ftrl_l1: 0.01 ftrl_l2: 0.1 } }
  tables { id: 3 dim: 4
           initializer { kind: KIND_NORMAL scale: 0.1 seed: 5 }
           optimizer { kind: KIND_ADAGRAD learning_rate: 0.1
                       initial_accumulator: 0.1 } }
  tables { id: 4 dim: 2 dense: true num_keys: 300
           optimizer { kind: KIND_ADAM } }
  tables { id: 5 admit_after: 3 admission_counters: 4096
           optimizer { kind: KIND_SGD } }
)";

std::unique_ptr<TableServer> MakeServer() {
  pb::JobConfig job;
  EXPECT_TRUE(ParseTextProto(kJob, "job", &job).ok());
  TableServerOptions options;
  options.num_threads = 1;
  options.num_shards = 3;
  auto server = TableServer::Create(job, 2, nullptr, options);
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? *std::move(server) : nullptr;
}

using Rows = std::map<uint64_t, std::vector<float>>;

Rows RowsOf(const Table& table) {
  Rows rows;
  table.ForEachStoredRow([&](uint64_t key, const float* row) {
    rows[key].assign(row, row + table.stride());
  });
  return rows;
}

bool BitIdentical(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() &&
         std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// `rounds` rounds of random gradients for `num_keys` sparse keys (a
// third of them only twice in all, below table 5's admission) and every
// dense key.
void Train(TableServer* server, int num_keys, int rounds, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> grad(0.0f, 1.0f);
  std::vector<uint64_t> sparse(num_keys);
  for (uint64_t& k : sparse) k = rng();
  std::vector<uint64_t> dense(300);
  for (uint64_t k = 0; k < dense.size(); ++k) dense[k] = k;
  for (int round = 0; round < rounds; ++round) {
    for (int id : {0, 3, 4, 5}) {
      const std::vector<uint64_t>& keys = id == 4 ? dense : sparse;
      for (size_t i = 0; i < keys.size(); ++i) {
        if (id == 5 && i % 3 == 0 && round >= 2) continue;
        Table* t = server->mutable_table(id);
        std::vector<float> g(t->dim());
        for (float& x : g) x = grad(rng);
        ASSERT_TRUE(t->Push({keys[i]}, g).ok());
      }
    }
  }
}

void ExpectSameTables(const TableServer& want, const TableServer& got,
                      const std::function<bool(Key)>& keep) {
  for (int id : {0, 3, 4, 5}) {
    Rows rows;
    for (auto& [key, row] : RowsOf(*want.table(id))) {
      if (keep(key)) rows[key] = row;
    }
    const Rows copied = RowsOf(*got.table(id));
    // A dense table holds every key; those not copied keep their first
    // values.
    if (got.table(id)->dense()) {
      for (auto& [key, row] : RowsOf(*MakeServer()->table(id))) {
        rows.emplace(key, row);
      }
    }
    ASSERT_EQ(copied.size(), rows.size()) << "table " << id;
    for (const auto& [key, row] : rows) {
      ASSERT_TRUE(copied.count(key) == 1) << "table " << id << " key " << key;
      ASSERT_TRUE(BitIdentical(copied.at(key), row))
          << "table " << id << " key " << key;
    }
  }
  EXPECT_EQ(got.table(5)->AdmissionCounters(),
            want.table(5)->AdmissionCounters());
}

TEST(TableServerRangeCopyTest, CopyIsBitIdenticalWithOptimizerState) {
  auto source = MakeServer();
  Train(source.get(), 1500, 3, 1);
  ASSERT_GT(source->table(5)->num_rows(), 0u);
  const auto all = [](Key) { return true; };
  const KVPairs<float> entries = source->SnapshotRanges(all);
  auto copy = MakeServer();
  ASSERT_TRUE(copy->InstallRanges(entries, nullptr).ok());
  ExpectSameTables(*source, *copy, all);
  // The same later pushes give the same rows: the optimizer state and the
  // admission counts (keys seen twice are admitted at their third push)
  // came across too.
  Train(source.get(), 1500, 2, 2);
  Train(copy.get(), 1500, 2, 2);
  ExpectSameTables(*source, *copy, all);
}

TEST(TableServerRangeCopyTest, OnlyTheWantedKeysInAnySplit) {
  auto source = MakeServer();
  Train(source.get(), 1500, 3, 3);
  const auto odd = [](Key k) { return (k * 0x9E3779B97F4A7C15ull) >> 63; };
  const KVPairs<float> entries = source->SnapshotRanges(odd);
  // Cut into parts at uneven places, installed one after the other.
  auto copy = MakeServer();
  const size_t n = entries.keys.size();
  size_t key = 0;
  size_t val = 0;
  for (size_t cut : {size_t{1}, n / 3, n / 3 + 1, n - 1, n}) {
    KVPairs<float> part;
    size_t vals = 0;
    for (size_t i = key; i < cut; ++i) vals += entries.lens[i];
    part.keys = entries.keys.Segment(key, cut);
    part.lens = entries.lens.Segment(key, cut);
    part.vals = entries.vals.Segment(val, val + vals);
    ASSERT_TRUE(copy->InstallRanges(part, nullptr).ok()) << cut;
    key = cut;
    val += vals;
  }
  ExpectSameTables(*source, *copy, odd);
  EXPECT_GT(copy->table(0)->num_rows(), 0u);
  EXPECT_LT(copy->table(0)->num_rows(), source->table(0)->num_rows());
}

TEST(TableServerRangeCopyTest, RefusesBadEntriesBeforeSettingAny) {
  auto source = MakeServer();
  Train(source.get(), 100, 1, 4);
  const KVPairs<float> good = source->SnapshotRanges([](Key) { return true; });
  auto bad_tag = [&](float tag) {
    KVPairs<float> e = good;
    e.vals = SArray<float>(good.vals.size());
    std::copy(good.vals.begin(), good.vals.end(), e.vals.begin());
    e.vals[e.vals.size() - 2 * 2 - 1] = tag;  // the clocks entry, last
    return e;
  };
  for (float tag : {7.0f, -3.0f, 1e30f, std::nanf("")}) {
    auto copy = MakeServer();
    absl::Status s = copy->InstallRanges(bad_tag(tag), nullptr);
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << tag << ": " << s;
    EXPECT_EQ(copy->table(0)->num_rows(), 0u) << tag;
  }
  KVPairs<float> short_vals = good;
  short_vals.vals = good.vals.Segment(0, good.vals.size() - 1);
  auto copy = MakeServer();
  absl::Status s = copy->InstallRanges(short_vals, nullptr);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("overruns"));
  EXPECT_EQ(copy->table(0)->num_rows(), 0u);
}

}  // namespace
}  // namespace petrel
