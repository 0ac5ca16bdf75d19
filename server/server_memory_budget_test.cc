// The server's memory cap over all its tables (server/server_memory_budget.h):
// how it is split, and two tables streaming keys under one cap.
#include "server/server_memory_budget.h"

#include <set>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "base/config_file.h"
#include "server/table_server.h"

namespace petrel {
namespace {

using ::testing::HasSubstr;

TableOptions Sparse(int id, int dim, uint64_t own_cap = 0) {
  TableOptions o;
  o.id = id;
  o.dim = dim;
  o.optimizer.kind = OptimizerKind::kSgd;
  o.memory_cap_bytes = own_cap;
  return o;
}

TEST(ServerMemoryBudgetTest, RowBytesAreTheFloatsAndTheTracking) {
  EXPECT_EQ(*SparseRowBytes(Sparse(0, 1)), 4u + 16u);
  TableOptions adagrad = Sparse(1, 16);
  adagrad.optimizer.kind = OptimizerKind::kAdagrad;
  EXPECT_EQ(*SparseRowBytes(adagrad), 16u * 4 * 2 + 16u);
}

TEST(ServerMemoryBudgetTest, SharesFollowBytesPerRow) {
  // Rows of 20 and 272 bytes: each table gets the same number of rows'
  // worth of the cap (5000 each), dense bytes set aside first.
  std::vector<TableOptions> tables = {Sparse(0, 1), Sparse(1, 64)};
  TableOptions dense;
  dense.id = 2;
  dense.dense = true;
  dense.num_keys = 10;
  tables.push_back(dense);
  ASSERT_TRUE(SplitServerMemoryCap(5000 * 292 + 700, 700, &tables).ok());
  EXPECT_EQ(tables[0].memory_cap_bytes, 5000u * 20);
  EXPECT_EQ(tables[1].memory_cap_bytes, 5000u * 272);
  EXPECT_EQ(tables[2].memory_cap_bytes, 0u);  // dense: untouched
}

TEST(ServerMemoryBudgetTest, OwnCapBelowItsShareLeavesTheRestToOthers) {
  // Equal rows (20 bytes each): shares of 1000, 1000, 1000; table 0's own
  // cap of 400 wins and the 600 left go to the other two; table 2's own
  // cap of 5000 is above its share, so the share wins.
  std::vector<TableOptions> tables = {Sparse(0, 1, 400), Sparse(1, 1),
                                      Sparse(2, 1, 5000)};
  ASSERT_TRUE(SplitServerMemoryCap(3000, 0, &tables).ok());
  EXPECT_EQ(tables[0].memory_cap_bytes, 400u);
  EXPECT_EQ(tables[1].memory_cap_bytes, 1300u);
  EXPECT_EQ(tables[2].memory_cap_bytes, 1300u);
  // No server cap: nothing changes.
  std::vector<TableOptions> uncapped = {Sparse(0, 1, 400), Sparse(1, 1)};
  ASSERT_TRUE(SplitServerMemoryCap(0, 0, &uncapped).ok());
  EXPECT_EQ(uncapped[0].memory_cap_bytes, 400u);
  EXPECT_EQ(uncapped[1].memory_cap_bytes, 0u);
}

TEST(ServerMemoryBudgetTest, RefusesACapBelowTheDenseTables) {
  std::vector<TableOptions> tables = {Sparse(0, 1)};
  absl::Status s = SplitServerMemoryCap(1000, 1001, &tables);
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_EQ(s.message(),
            "server.memory_cap_mib: the cap of 1000 bytes is below the 1001 "
            "bytes of this server's dense tables, which hold all their rows");
}

TEST(ServerMemoryBudgetTest, SharesByUseKeepAFloorAndOwnCaps) {
  // A floor of 8000 / (4 * 2) = 1000 each, the other 6000 by use.
  EXPECT_EQ(SharesByUse(8000, {100, 0}, {0, 0}),
            (std::vector<uint64_t>{7000, 1000}));
  EXPECT_EQ(SharesByUse(8000, {1, 3}, {0, 0}),
            (std::vector<uint64_t>{2500, 5500}));
  // Table 1's own cap (2000) is below its share: the rest goes to table 0.
  EXPECT_EQ(SharesByUse(8000, {1, 3}, {0, 2000}),
            (std::vector<uint64_t>{6000, 2000}));
  // No use: nothing to go by.
  EXPECT_TRUE(SharesByUse(8000, {0, 0}, {0, 0}).empty());
}

pb::JobConfig Job(const std::string& text) {
  pb::JobConfig job;
  absl::Status s = ParseTextProto(text, "job", &job);
  EXPECT_TRUE(s.ok()) << s;
  return job;
}

// An FM job's two sparse tables (rows of 20 and 272 bytes with SGD) under
// one server cap of `cap_mib`.
constexpr char kTwoTables[] =
    "model { kind: KIND_FM fm_dim: 64 }\n"
    "tables { id: 0 dim: 1 optimizer { kind: KIND_SGD } }\n"
    "tables { id: 1 dim: 64 optimizer { kind: KIND_SGD } }\n";

std::unique_ptr<TableServer> MakeServer(const pb::JobConfig& job,
                                        MetricsRegistry* metrics = nullptr) {
  TableServerOptions options;
  options.num_threads = 1;
  options.num_shards = 1;
  auto made = TableServer::Create(job, 1, metrics, options);
  EXPECT_TRUE(made.ok()) << made.status();
  return made.ok() ? *std::move(made) : nullptr;
}

// Pulls and pushes `keys` of table `id`, as a worker's batch does.
void Touch(TableServer& server, int id, const std::vector<uint64_t>& keys) {
  Table* t = server.mutable_table(id);
  std::vector<float> v(keys.size() * t->dim());
  ASSERT_TRUE(t->Pull(keys, absl::MakeSpan(v)).ok());
  std::vector<float> g(v.size(), 0.5f);
  ASSERT_TRUE(t->Push(keys, g).ok());
}

std::set<uint64_t> KeysOf(const Table& t) {
  std::set<uint64_t> keys;
  t.ForEachRow([&](uint64_t key, const float*) { keys.insert(key); });
  return keys;
}

// The shares as made at start (no rebalance here: the test drives the
// tables directly, not through the handler).
TEST(ServerMemoryCapTest, TwoTablesStreamingStayWithinOneCap) {
  // 64 KiB: table 0 gets 65536 * 20 / 292 = 4488 bytes, table 1 61047 (shares
  // round down).
  pb::JobConfig job =
      Job(std::string(kTwoTables) + "server { memory_cap_mib: 0.0625 }\n");
  MetricsRegistry metrics;
  std::unique_ptr<TableServer> server = MakeServer(job, &metrics);
  ASSERT_NE(server, nullptr);
  ASSERT_EQ(server->memory_cap_bytes(), 65536u);
  const Table& t0 = *server->table(0);
  const Table& t1 = *server->table(1);
  EXPECT_EQ(t0.options().memory_cap_bytes, 4488u);
  EXPECT_EQ(t1.options().memory_cap_bytes, 61047u);
  // The rows those shares hold (server/table.cc's plan: a 16-slot index
  // and a 4 KiB reserve for table 0, a 256-slot index for table 1).
  const uint32_t rows0 = t0.max_rows_per_shard();
  const uint32_t rows1 = t1.max_rows_per_shard();
  EXPECT_EQ(rows0, 6u);
  EXPECT_EQ(rows1, 176u);
  // Each request: the table's hot key first, then one new key. The hot
  // key, touched by every request, is never the least recently used.
  constexpr uint64_t kHot = 1000000;
  constexpr uint64_t kStream = 400;
  for (uint64_t k = 1; k <= kStream; ++k) {
    Touch(*server, 0, {kHot, k});
    EXPECT_LE(server->MemoryBytes(), server->memory_cap_bytes()) << k;
    Touch(*server, 1, {kHot, k});
    EXPECT_LE(server->MemoryBytes(), server->memory_cap_bytes()) << k;
  }
  // Each table holds as many rows as its share allows, and evicted the rest
  // of the 401 keys it saw, the least recently used first.
  EXPECT_EQ(t0.num_rows(), rows0);
  EXPECT_EQ(t1.num_rows(), rows1);
  EXPECT_EQ(t0.evicted(), kStream + 1 - rows0);
  EXPECT_EQ(t1.evicted(), kStream + 1 - rows1);
  EXPECT_NE(t0.Find(kHot), nullptr);
  EXPECT_NE(t1.Find(kHot), nullptr);
  // Table 0 holds at most 16 rows, where the LRU is exact: the hot key and
  // the last rows0 - 1 keys streamed.
  std::set<uint64_t> want = {kHot};
  for (uint64_t k = kStream - rows0 + 2; k <= kStream; ++k) want.insert(k);
  EXPECT_EQ(KeysOf(t0), want);
  EXPECT_EQ(server->MemoryBytes(), t0.MemoryBytes() + t1.MemoryBytes());
  // The server names its total and cap at the end.
  std::vector<std::string> lines = server->DescribeMemory();
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[2], absl::StrCat("all tables: ", server->MemoryBytes(),
                                   " bytes (server cap 65536), shares moved "
                                   "0 times"));
}

TEST(ServerMemoryCapTest, SharesFollowTheTablesUse) {
  pb::JobConfig job =
      Job(std::string(kTwoTables) + "server { memory_cap_mib: 0.0625 }\n");
  std::unique_ptr<TableServer> server = MakeServer(job);
  ASSERT_NE(server, nullptr);
  Table& t0 = *server->mutable_table(0);
  Table& t1 = *server->mutable_table(1);
  constexpr uint64_t kHot = 1000000;
  // Only table 1 is used: it gets the floor of 65536 / 8 = 8192 and all
  // the rest (49152); table 0 keeps its floor.
  for (uint64_t k = 1; k <= 100; ++k) Touch(*server, 1, {kHot, k});
  ASSERT_EQ(*server->RebalanceMemory(), true);
  EXPECT_EQ(t0.options().memory_cap_bytes, 8192u);
  EXPECT_EQ(t1.options().memory_cap_bytes, 8192u + 49152u);
  EXPECT_EQ(t1.num_rows(), 101u);  // nothing of table 1 went
  EXPECT_LE(server->MemoryBytes(), server->memory_cap_bytes());
  // Now only table 0 streams new keys: the shares turn round, table 1
  // shrinks to its floor keeping its most recently used rows.
  const uint32_t rows0 = t0.max_rows_per_shard();
  for (uint64_t k = 1; k <= 400; ++k) {
    Touch(*server, 0, {kHot, k});
    ASSERT_LE(server->MemoryBytes(), server->memory_cap_bytes()) << k;
  }
  ASSERT_EQ(*server->RebalanceMemory(), true);
  EXPECT_EQ(t0.options().memory_cap_bytes, 8192u + 49152u);
  EXPECT_EQ(t1.options().memory_cap_bytes, 8192u);
  EXPECT_LE(server->MemoryBytes(), server->memory_cap_bytes());
  EXPECT_LE(t1.MemoryBytes(), 8192u);
  const uint32_t rows1 = t1.max_rows_per_shard();
  EXPECT_EQ(rows1, 13u);  // one slab of 22 rows (272 bytes each) and 16 slots
  EXPECT_EQ(t1.num_rows(), rows1);
  EXPECT_EQ(t1.evicted(), 101u - rows1);
  EXPECT_NE(t1.Find(kHot), nullptr);
  EXPECT_NE(t1.Find(100), nullptr);  // touched with it, last
  // Table 0 now holds more rows and fills them.
  EXPECT_GT(t0.max_rows_per_shard(), rows0);
  for (uint64_t k = 401; k <= 2000; ++k) {
    Touch(*server, 0, {kHot, k});
    ASSERT_LE(server->MemoryBytes(), server->memory_cap_bytes()) << k;
  }
  EXPECT_EQ(t0.num_rows(), t0.max_rows_per_shard());
  EXPECT_NE(t0.Find(kHot), nullptr);
  // The same use again moves nothing; no use at all neither.
  for (uint64_t k = 2001; k <= 3600; ++k) Touch(*server, 0, {kHot, k});
  EXPECT_EQ(*server->RebalanceMemory(), false);
  EXPECT_EQ(*server->RebalanceMemory(), false);
  EXPECT_THAT(server->DescribeMemory().back(),
              HasSubstr("shares moved 2 times"));
}

TEST(ServerMemoryCapTest, ATablesOwnCapAppliesToo) {
  // Table 1's own cap (8 KiB) is below its share: it keeps it, and table 0
  // takes the rest.
  pb::JobConfig job =
      Job("model { kind: KIND_FM fm_dim: 64 }\n"
          "tables { id: 0 dim: 1 optimizer { kind: KIND_SGD } }\n"
          "tables { id: 1 dim: 64 optimizer { kind: KIND_SGD } "
          "memory_cap_mib: 0.0078125 }\n"
          "server { memory_cap_mib: 0.0625 }\n");
  std::unique_ptr<TableServer> server = MakeServer(job);
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(server->table(0)->options().memory_cap_bytes, 65536u - 8192u);
  EXPECT_EQ(server->table(1)->options().memory_cap_bytes, 8192u);
}

TEST(ServerMemoryCapTest, RefusesCapsThatCannotWork) {
  TableServerOptions options;
  options.num_threads = 1;
  options.num_shards = 1;
  // A share too small for a row of table 1.
  auto made = TableServer::Create(
      Job(std::string(kTwoTables) + "server { memory_cap_mib: 0.01 }\n"), 1,
      nullptr, options);
  ASSERT_FALSE(made.ok());
  // 10485 bytes: table 0's share is 10485 * 20 / 292 = 718.
  EXPECT_EQ(made.status().message(),
            "table 0 (its share of server.memory_cap_mib): table option "
            "memory_cap_bytes = 718 leaves no room for a row in each of the 1 "
            "shards (a row takes 20 bytes, plus its index slots)");
  made = TableServer::Create(
      Job(std::string(kTwoTables) + "server { memory_cap_mib: -1 }\n"), 1,
      nullptr, options);
  ASSERT_FALSE(made.ok());
  EXPECT_EQ(made.status().message(),
            "server.memory_cap_mib: -1 is not a finite value in 0..10^12");
  // An MLP's dense table (its weights) cannot be evicted.
  made = TableServer::Create(Job("model { kind: KIND_MLP hidden: 64 }\n"
                                 "server { memory_cap_mib: 0.01 }\n"),
                             1, nullptr, options);
  ASSERT_FALSE(made.ok());
  EXPECT_THAT(std::string(made.status().message()),
              HasSubstr("server.memory_cap_mib: the cap of 10485 bytes is "
                        "below the "));
}

}  // namespace
}  // namespace petrel
