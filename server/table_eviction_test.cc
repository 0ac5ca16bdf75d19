// Admission, TTL and memory cap of sparse tables (server/table.h).
#include <algorithm>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include "gtest/gtest.h"

#include "base/shard_pool.h"
#include "server/table.h"

namespace petrel {
namespace {

TableOptions Sparse(int dim) {
  TableOptions o;
  o.id = 3;
  o.dim = dim;
  o.num_shards = 1;
  o.initializer.kind = InitializerKind::kNormal;
  o.initializer.scale = 0.1f;
  o.initializer.seed = 5;
  o.optimizer.kind = OptimizerKind::kSgd;
  o.optimizer.learning_rate = 0.5f;
  return o;
}

std::unique_ptr<Table> Make(const TableOptions& o,
                            MetricsRegistry* metrics = nullptr) {
  absl::StatusOr<std::unique_ptr<Table>> t = Table::Create(o, metrics);
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? *std::move(t) : nullptr;
}

std::vector<float> PullOf(Table& t, std::vector<uint64_t> keys) {
  std::vector<float> out(keys.size() * t.dim());
  EXPECT_TRUE(t.Pull(keys, absl::MakeSpan(out)).ok());
  return out;
}

void PushOnes(Table& t, std::vector<uint64_t> keys) {
  std::vector<float> g(keys.size() * t.dim(), 1.0f);
  ASSERT_TRUE(t.Push(keys, g).ok());
}

// What a key's row starts as: the initializer's value for it.
std::vector<float> Initial(const TableOptions& o, uint64_t key) {
  TableOptions plain = o;
  plain.admit_after = 0;
  plain.ttl_ticks = 0;
  plain.memory_cap_bytes = 0;
  std::unique_ptr<Table> t = Make(plain);
  return PullOf(*t, {key});
}

std::vector<float> RowOf(const Table& t, uint64_t key) {
  const float* row = t.Find(key);
  if (row == nullptr) return {};
  return std::vector<float>(row, row + t.dim());
}

TEST(TableAdmissionTest, KeyGetsItsRowAtTheNthPushedSighting) {
  TableOptions o = Sparse(2);
  o.admit_after = 3;
  MetricsRegistry metrics;
  auto t = Make(o, &metrics);
  const std::vector<float> init = Initial(o, 5);
  ASSERT_NE(init[0], 0.0f);
  // Pulls neither make a row nor count as sightings.
  for (int i = 0; i < 10; ++i) EXPECT_EQ(PullOf(*t, {5}), init);
  EXPECT_EQ(t->num_rows(), 0u);
  PushOnes(*t, {5});
  PushOnes(*t, {5});
  EXPECT_EQ(t->num_rows(), 0u);
  EXPECT_EQ(t->Find(5), nullptr);
  EXPECT_EQ(PullOf(*t, {5}), init);  // the two pushes were not stored
  EXPECT_EQ(t->filtered(), 2u);
  PushOnes(*t, {5});  // the third: admitted, and this push applied
  ASSERT_NE(t->Find(5), nullptr);
  EXPECT_EQ(RowOf(*t, 5), (std::vector<float>{init[0] - 0.5f, init[1] - 0.5f}));
  EXPECT_EQ(t->admitted(), 1u);
  // Sightings within one push count one by one.
  const std::vector<float> init9 = Initial(o, 9);
  PushOnes(*t, {9, 9, 9, 9});
  EXPECT_EQ(RowOf(*t, 9), (std::vector<float>{init9[0] - 0.5f - 0.5f,
                                              init9[1] - 0.5f - 0.5f}));
  EXPECT_EQ(t->filtered(), 4u);
  EXPECT_EQ(t->admitted(), 2u);
  const MetricLabels label = {{"table", "3"}};
  EXPECT_EQ(*metrics.Value("petrel_table_admitted_total", label), 2);
  EXPECT_EQ(*metrics.Value("petrel_table_filtered_total", label), 4);
  EXPECT_EQ(*metrics.Value("petrel_table_evicted_total", label), 0);
}

TEST(TableAdmissionTest, CountersStayWithinTheirFixedSize) {
  TableOptions o = Sparse(1);
  o.admit_after = 100;
  o.admission_counters = 4096;
  o.num_shards = 4;
  auto t = Make(o);
  const size_t bytes = t->MemoryBytes();
  EXPECT_EQ(bytes, 4096 * sizeof(uint16_t));
  std::vector<uint64_t> keys(100000);
  std::iota(keys.begin(), keys.end(), 1000);
  PushOnes(*t, keys);
  EXPECT_EQ(t->MemoryBytes(), bytes);
  EXPECT_EQ(t->num_rows(), 0u);  // 100000 keys seen once: none admitted
  EXPECT_EQ(t->filtered(), 100000u);
  EXPECT_EQ(t->AdmissionCounters().size(), 4096u);
}

TEST(TableAdmissionTest, CountersRoundTrip) {
  TableOptions o = Sparse(1);
  o.admit_after = 2;
  o.admission_counters = 256;
  auto a = Make(o);
  PushOnes(*a, {1, 2, 3});
  auto b = Make(o);
  ASSERT_TRUE(b->SetAdmissionCounters(a->AdmissionCounters()).ok());
  PushOnes(*b, {2});  // the second sighting, counted across the copy
  EXPECT_NE(b->Find(2), nullptr);
  EXPECT_EQ(b->admitted(), 1u);
  EXPECT_FALSE(b->SetAdmissionCounters(std::vector<uint16_t>(10)).ok());
}

TEST(TableTtlTest, RowsUntouchedForTtlPushesAreGone) {
  TableOptions o = Sparse(1);
  o.ttl_ticks = 2;
  o.ttl_unit = TableOptions::TtlUnit::kPushes;
  auto t = Make(o);
  PushOnes(*t, {1, 2});  // push 1
  PushOnes(*t, {2});     // push 2
  EXPECT_NE(t->Find(1), nullptr);
  PushOnes(*t, {3});  // push 3: key 1 untouched by pushes 2 and 3
  EXPECT_EQ(t->Find(1), nullptr);
  EXPECT_NE(t->Find(2), nullptr);
  PullOf(*t, {3});    // a pull touches too
  PushOnes(*t, {4});  // push 4: key 2 untouched by 3 and 4
  EXPECT_EQ(t->Find(2), nullptr);
  EXPECT_NE(t->Find(3), nullptr);
  EXPECT_NE(t->Find(4), nullptr);
  EXPECT_EQ(t->num_rows(), 2u);
  EXPECT_EQ(t->evicted(), 2u);
  // A key that comes back starts over from its initial value.
  EXPECT_EQ(PullOf(*t, {1}), Initial(o, 1));
}

TEST(TableTtlTest, RowsUntouchedForTtlClocksAreGone) {
  TableOptions o = Sparse(1);
  o.ttl_ticks = 1;
  auto t = Make(o);
  PullOf(*t, {1, 2});
  t->AdvanceClock(1);
  EXPECT_EQ(t->num_rows(), 2u);
  PullOf(*t, {2});
  t->AdvanceClock(1);  // key 1 not touched during clock 1
  EXPECT_EQ(t->Find(1), nullptr);
  EXPECT_NE(t->Find(2), nullptr);
  t->AdvanceClock(5);
  EXPECT_EQ(t->num_rows(), 0u);
  EXPECT_EQ(t->evicted(), 2u);
}

// TTL against an exact model: many keys, several shards, small slabs (so
// rows move, slabs go and the index compacts).
TEST(TableTtlTest, MatchesAModelUnderRandomPushes) {
  TableOptions o = Sparse(2);
  o.ttl_ticks = 3;
  o.ttl_unit = TableOptions::TtlUnit::kPushes;
  o.num_shards = 3;
  o.rows_per_slab = 4;
  o.initializer.kind = InitializerKind::kZeros;
  auto t = Make(o);
  ShardPool pool(2);
  ASSERT_TRUE(pool.Start().ok());
  ParallelRunner runner = [&](int n, const std::function<void(int)>& fn) {
    pool.Run(n, fn);
  };
  struct Model {
    float value;
    int last;
  };
  std::map<uint64_t, Model> model;
  std::mt19937 rng(1);
  for (int push = 1; push <= 400; ++push) {
    std::set<uint64_t> keys;
    const int n = 1 + rng() % 30;
    for (int i = 0; i < n; ++i) keys.insert(rng() % 200);
    std::vector<uint64_t> k(keys.begin(), keys.end());
    std::vector<float> g(k.size() * 2, 1.0f);
    ASSERT_TRUE(t->Push(k, g, runner).ok());
    for (uint64_t key : k) {
      Model& m = model[key];  // a new one is {0, 0}
      m.value -= 0.5f;
      m.last = push;
    }
    for (auto it = model.begin(); it != model.end();) {
      it = push - it->second.last >= 3 ? model.erase(it) : std::next(it);
    }
    ASSERT_EQ(t->num_rows(), model.size()) << "push " << push;
    for (uint64_t key = 0; key < 200; ++key) {
      auto it = model.find(key);
      const float* row = t->Find(key);
      if (it == model.end()) {
        ASSERT_EQ(row, nullptr) << "key " << key << " push " << push;
      } else {
        ASSERT_NE(row, nullptr) << "key " << key << " push " << push;
        ASSERT_EQ(row[0], it->second.value);
      }
    }
  }
  EXPECT_GT(t->evicted(), 100u);
}

// A cap that fits 8 rows in one shard (see PlanCap in table.cc): 4096
// bytes of slack, an index of 16 slots, 32 bytes a row (4 floats and the
// tracking).
constexpr uint64_t kEightRows = 4096 + 16 * 16 + 8 * 32;

TEST(TableCapTest, EvictsLeastRecentlyUsedAndStaysUnderTheCap) {
  TableOptions o = Sparse(4);
  o.memory_cap_bytes = kEightRows;
  MetricsRegistry metrics;
  auto t = Make(o, &metrics);
  ASSERT_EQ(t->max_rows_per_shard(), 8u);
  for (uint64_t k = 0; k < 8; ++k) PullOf(*t, {k});
  EXPECT_EQ(t->num_rows(), 8u);
  EXPECT_EQ(t->evicted(), 0u);
  PullOf(*t, {0});
  PushOnes(*t, {2});
  PullOf(*t, {4});
  // Least recent first: 1, 3, 5, 6, 7, 0, 2, 4.
  const std::vector<uint64_t> order = {1, 3, 5, 6, 7, 0, 2, 4};
  for (size_t i = 0; i < order.size(); ++i) {
    PullOf(*t, {100 + i});
    EXPECT_EQ(t->Find(order[i]), nullptr) << "step " << i;
    for (size_t j = i + 1; j < order.size(); ++j) {
      EXPECT_NE(t->Find(order[j]), nullptr)
          << "step " << i << " key " << order[j];
    }
    EXPECT_EQ(t->num_rows(), 8u);
    EXPECT_LE(t->MemoryBytes(), o.memory_cap_bytes);
  }
  EXPECT_EQ(t->evicted(), 8u);
  const MetricLabels label = {{"table", "3"}};
  EXPECT_EQ(*metrics.Value("petrel_table_evicted_total", label), 8);
  EXPECT_EQ(*metrics.Value("petrel_table_memory_cap_bytes", label),
            static_cast<double>(kEightRows));
}

// Under a cap with single-key pushes, every row a table holds is its
// key's initial value plus the pushes since it was (re)made; bytes never
// pass the cap however many keys come.
TEST(TableCapTest, RowsStayRightAndBytesUnderTheCapUnderRandomKeys) {
  TableOptions o = Sparse(2);
  o.initializer.kind = InitializerKind::kZeros;
  o.num_shards = 4;
  o.rows_per_slab = 8;
  o.memory_cap_bytes = 4 * (4096 + 64 * 16 + 32 * 32);
  auto t = Make(o);
  ASSERT_GE(t->max_rows_per_shard(), 16u);
  std::map<uint64_t, float> model;
  std::mt19937 rng(2);
  size_t most = 0;
  for (int push = 0; push < 5000; ++push) {
    const uint64_t key = rng() % 1000;
    if (t->Find(key) == nullptr) model[key] = 0.0f;
    PushOnes(*t, {key});
    model[key] -= 0.5f;
    ASSERT_LE(t->MemoryBytes(), o.memory_cap_bytes);
    ASSERT_LE(t->num_rows(), 4u * t->max_rows_per_shard());
    most = std::max(most, t->num_rows());
    for (auto it = model.begin(); it != model.end();) {
      const float* row = t->Find(it->first);
      if (row == nullptr) {
        it = model.erase(it);
        continue;
      }
      ASSERT_EQ(row[0], it->second) << "key " << it->first;
      ++it;
    }
    ASSERT_EQ(model.size(), t->num_rows());
  }
  EXPECT_GT(t->evicted(), 3000u);
  EXPECT_GE(most, 3u * t->max_rows_per_shard());
}

// A checkpoint's Reserve hint and a bulk SetRows of more rows than fit
// keep to the cap too (rows of one request tie in recency: which of them
// stay is not specified).
TEST(TableCapTest, BulkLoadsStayUnderTheCap) {
  TableOptions o = Sparse(4);
  o.memory_cap_bytes = kEightRows;
  auto t = Make(o);
  ASSERT_TRUE(t->Reserve(1000000).ok());
  EXPECT_LE(t->MemoryBytes(), o.memory_cap_bytes);
  std::vector<uint64_t> keys(100);
  std::iota(keys.begin(), keys.end(), 0);
  std::vector<float> values(keys.size() * 4, 2.0f);
  ASSERT_TRUE(t->SetRows(keys, values, 4, /*with_state=*/true).ok());
  EXPECT_EQ(t->num_rows(), 8u);
  EXPECT_LE(t->MemoryBytes(), o.memory_cap_bytes);
  EXPECT_EQ(t->evicted(), 92u);
}

// A cap moved down keeps the most recently used rows (exact LRU: at most
// 16 rows) and the bytes within it; moved up, the table grows to it.
TEST(TableCapTest, SetMemoryCapShrinksToTheMostRecentRowsAndGrowsBack) {
  TableOptions o = Sparse(2);
  o.rows_per_slab = 8;
  o.memory_cap_bytes = 4800;
  MetricsRegistry metrics;
  auto t = Make(o, &metrics);
  const uint32_t full = t->max_rows_per_shard();
  ASSERT_EQ(full, 11u);
  for (uint64_t k = 1; k <= full; ++k) PullOf(*t, {k});
  PullOf(*t, {1});  // now the most recent
  ASSERT_TRUE(t->SetMemoryCap(4500).ok());
  const uint32_t small = t->max_rows_per_shard();
  ASSERT_EQ(small, 6u);
  EXPECT_EQ(t->num_rows(), small);
  EXPECT_LE(t->MemoryBytes(), 4500u);
  EXPECT_EQ(t->evicted(), full - small);
  EXPECT_EQ(t->options().memory_cap_bytes, 4500u);
  EXPECT_EQ(*metrics.Value("petrel_table_memory_cap_bytes", {{"table", "3"}}),
            4500);
  std::set<uint64_t> kept;
  t->ForEachRow([&](uint64_t key, const float*) { kept.insert(key); });
  EXPECT_EQ(kept, (std::set<uint64_t>{1, 7, 8, 9, 10, 11}));
  // Back up, and the table grows to it.
  ASSERT_TRUE(t->SetMemoryCap(4800).ok());
  EXPECT_EQ(t->max_rows_per_shard(), full);
  for (uint64_t k = 100; k < 130; ++k) {
    PullOf(*t, {k});
    ASSERT_LE(t->MemoryBytes(), 4800u);
  }
  EXPECT_EQ(t->num_rows(), full);
  // Too small for a row, or no cap: refused, nothing changed.
  EXPECT_FALSE(t->SetMemoryCap(1000).ok());
  EXPECT_EQ(t->options().memory_cap_bytes, 4800u);
  EXPECT_EQ(t->num_rows(), full);
  auto uncapped = Make(Sparse(2));
  EXPECT_EQ(uncapped->SetMemoryCap(5000).message(),
            "table 3 has no memory cap to change");
}

TEST(TableCapTest, TakeRecentRowsCountsRowsTouchedSinceTheLastCall) {
  TableOptions o = Sparse(4);
  o.memory_cap_bytes = kEightRows;
  auto t = Make(o);
  PullOf(*t, {1, 2, 3});
  PushOnes(*t, {2});
  EXPECT_EQ(t->TakeRecentRows(), 3u);
  EXPECT_EQ(t->TakeRecentRows(), 0u);
  PullOf(*t, {1});
  EXPECT_EQ(t->TakeRecentRows(), 1u);
  // Ten new keys in a table of 8 rows: 3, 2, 1 go (touched before the
  // last call), then 100 and 101 (touched since: they count).
  for (uint64_t k = 100; k < 110; ++k) PullOf(*t, {k});
  EXPECT_EQ(t->evicted(), 5u);
  EXPECT_EQ(t->Find(101), nullptr);
  EXPECT_EQ(t->TakeRecentRows(), 10u);
}

TEST(TableCapTest, RefusesACapWithoutRoomForARow) {
  TableOptions o = Sparse(4);
  o.memory_cap_bytes = 1000;
  absl::StatusOr<std::unique_ptr<Table>> t = Table::Create(o);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("memory_cap_bytes"), std::string::npos);
  o.memory_cap_bytes = 0;
  o.dense = true;
  o.num_keys = 10;
  o.ttl_ticks = 3;
  EXPECT_FALSE(Table::Create(o).ok());
}

}  // namespace
}  // namespace petrel
