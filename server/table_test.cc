#include "server/table.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <vector>

#include "gtest/gtest.h"

#include "base/shard_pool.h"

namespace petrel {
namespace {

TableOptions Sparse(int dim) {
  TableOptions o;
  o.id = 7;
  o.dim = dim;
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

std::vector<float> PullAll(Table& t, const std::vector<uint64_t>& keys,
                           const ParallelRunner& runner = nullptr) {
  std::vector<float> out(keys.size() * t.dim());
  EXPECT_TRUE(t.Pull(keys, absl::MakeSpan(out), runner).ok());
  return out;
}

TEST(TableTest, SparseCreatesRowsOnFirstTouchAndCounts) {
  auto t = Make(Sparse(2));
  EXPECT_EQ(t->num_rows(), 0u);
  EXPECT_EQ(t->Find(1), nullptr);
  PullAll(*t, {1, 2, 3, 2});
  EXPECT_EQ(t->num_rows(), 3u);
  std::vector<float> g = {1, 1};
  ASSERT_TRUE(t->Push(std::vector<uint64_t>{40}, g).ok());
  EXPECT_EQ(t->num_rows(), 4u);
  ASSERT_NE(t->Find(40), nullptr);
  EXPECT_FLOAT_EQ(t->Find(40)[0], -0.5f);  // zeros, then SGD step
  EXPECT_EQ(t->Find(41), nullptr);
}

TEST(TableTest, RowsDependOnlyOnSeedTableAndKey) {
  TableOptions a = Sparse(3);
  a.initializer.kind = InitializerKind::kNormal;
  a.initializer.scale = 0.1f;
  a.initializer.seed = 11;
  a.rows_per_slab = 5;
  TableOptions b = a;
  b.num_shards = 7;
  b.rows_per_slab = 64;
  auto ta = Make(a);
  auto tb = Make(b);
  std::vector<uint64_t> keys(200);
  std::iota(keys.begin(), keys.end(), 1000);
  std::vector<uint64_t> shuffled = keys;
  std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937(5));
  PullAll(*tb, shuffled);  // b inserts in another order
  std::vector<float> va = PullAll(*ta, keys);
  std::vector<float> vb = PullAll(*tb, keys);
  EXPECT_EQ(va, vb);
  Initializer init = *Initializer::Create(a.initializer, a.id);
  std::vector<float> want(3);
  init.Fill(1005, want.data(), 3);
  EXPECT_EQ(std::vector<float>(va.begin() + 15, va.begin() + 18), want);
}

TEST(TableTest, DenseHoldsItsKeyRangeAndRejectsOthers) {
  TableOptions o = Sparse(2);
  o.dense = true;
  o.num_keys = 10;
  o.initializer.kind = InitializerKind::kUniform;
  o.initializer.scale = 1.0f;
  o.rows_per_slab = 4;
  auto t = Make(o);
  EXPECT_EQ(t->num_rows(), 10u);
  std::vector<float> out(4);
  absl::Status s = t->Pull(std::vector<uint64_t>{3, 10}, absl::MakeSpan(out));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(s.message()).find("key 10"), std::string::npos) << s;
  std::vector<float> before = PullAll(*t, {3});
  s = t->Push(std::vector<uint64_t>{3, 11}, std::vector<float>{1, 1, 1, 1});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(PullAll(*t, {3}), before);  // nothing applied
  EXPECT_EQ(t->num_rows(), 10u);
  Initializer init = *Initializer::Create(o.initializer, o.id);
  std::vector<float> want(2);
  init.Fill(9, want.data(), 2);
  EXPECT_EQ(PullAll(*t, {9}), want);
  o.num_keys = 0;
  EXPECT_EQ(Table::Create(o).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(TableTest, DenseFillOnManyThreadsGivesTheSameRowsAndStopsOnCancel) {
  TableOptions o = Sparse(3);
  o.dense = true;
  o.num_keys = 1000;
  o.initializer.kind = InitializerKind::kNormal;
  o.initializer.scale = 0.1f;
  o.optimizer.kind = OptimizerKind::kAdagrad;
  o.optimizer.initial_accumulator = 0.25f;
  o.rows_per_slab = 7;  // 143 slabs, the last one short
  std::vector<uint64_t> keys(o.num_keys);
  std::iota(keys.begin(), keys.end(), 0);
  auto one = Make(o);
  StartupProgress progress;
  absl::StatusOr<std::unique_ptr<Table>> four =
      Table::Create(o, nullptr, TableFill{4, &progress});
  ASSERT_TRUE(four.ok()) << four.status();
  EXPECT_EQ(PullAll(**four, keys), PullAll(*one, keys));
  EXPECT_EQ(progress.Describe(), "");  // the step ended
  // A push applies the same Adagrad state either way.
  const std::vector<float> grads(o.num_keys * 3, 0.5f);
  ASSERT_TRUE(one->Push(keys, grads).ok());
  ASSERT_TRUE((*four)->Push(keys, grads).ok());
  EXPECT_EQ(PullAll(**four, keys), PullAll(*one, keys));
  progress.Cancel("SIGTERM received");
  absl::StatusOr<std::unique_ptr<Table>> cancelled =
      Table::Create(o, nullptr, TableFill{2, &progress});
  EXPECT_TRUE(absl::IsCancelled(cancelled.status())) << cancelled.status();
  EXPECT_EQ(cancelled.status().message(),
            "SIGTERM received while filling dense table 7 (1000 rows of 3 "
            "weights, 0.0 GiB): 0% after 0");
}

TEST(TableTest, PushAppliesTheOptimizerToEveryOccurrence) {
  TableOptions o = Sparse(2);
  o.optimizer.kind = OptimizerKind::kAdagrad;
  o.optimizer.learning_rate = 0.1f;
  o.optimizer.initial_accumulator = 0.1f;
  auto t = Make(o);
  auto opt = *Optimizer::Create(o.optimizer);
  std::vector<float> w(2, 0.0f), state(opt->StateFloats(2));
  opt->InitState(w.data(), state.data(), 2);
  // Key 5 appears twice in one push and again in the next.
  std::vector<uint64_t> keys = {5, 6, 5};
  std::vector<float> grads = {1, 2, 3, 4, -1, 0.5f};
  ASSERT_TRUE(t->Push(keys, grads).ok());
  ASSERT_TRUE(
      t->Push(std::vector<uint64_t>{5}, std::vector<float>{0.2f, 0.2f}).ok());
  for (const float* g : {&grads[0], &grads[4]}) {
    opt->Update(w.data(), state.data(), g, 2);
  }
  float last[] = {0.2f, 0.2f};
  opt->Update(w.data(), state.data(), last, 2);
  EXPECT_EQ(PullAll(*t, {5}), w);
  EXPECT_EQ(t->Push(keys, std::vector<float>(5)).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(TableTest, ParallelShardsMatchInline) {
  TableOptions o = Sparse(4);
  o.optimizer.kind = OptimizerKind::kFtrl;
  o.initializer.kind = InitializerKind::kUniform;
  o.initializer.scale = 0.1f;
  o.num_shards = 8;
  o.parallel_min_keys = 16;
  o.rows_per_slab = 32;
  auto inline_table = Make(o);
  auto parallel_table = Make(o);
  ShardPool pool(3);
  ASSERT_TRUE(pool.Start().ok());
  ParallelRunner runner = [&](int n, const std::function<void(int)>& fn) {
    pool.Run(n, fn);
  };
  std::mt19937 rng(1);
  for (int round = 0; round < 5; ++round) {
    std::vector<uint64_t> keys(500);
    for (uint64_t& k : keys) k = rng() % 300;  // many duplicates
    std::vector<float> grads(keys.size() * 4);
    for (float& g : grads) g = static_cast<float>(rng() % 100) / 50 - 1;
    ASSERT_TRUE(inline_table->Push(keys, grads).ok());
    ASSERT_TRUE(parallel_table->Push(keys, grads, runner).ok());
  }
  std::vector<uint64_t> all(300);
  std::iota(all.begin(), all.end(), 0);
  EXPECT_EQ(PullAll(*inline_table, all), PullAll(*parallel_table, all, runner));
  EXPECT_EQ(inline_table->num_rows(), parallel_table->num_rows());
  pool.Stop();
}

TEST(TableTest, MemoryIsRowsTimesStridePlusIndex) {
  TableOptions o = Sparse(4);
  o.optimizer.kind = OptimizerKind::kFtrl;  // z and n: 8 state floats
  o.rows_per_slab = 100;
  o.num_shards = 1;
  MetricsRegistry metrics;
  auto t = Make(o, &metrics);
  EXPECT_EQ(t->stride(), 12);
  std::vector<uint64_t> keys(1000);
  std::iota(keys.begin(), keys.end(), 0);
  PullAll(*t, keys);
  const size_t rows_bytes = 1000 * 12 * sizeof(float);
  EXPECT_GE(t->MemoryBytes(), rows_bytes);
  // The hash index costs under 40 bytes per row (slots of 13 bytes at a
  // load factor of at least 7/16).
  EXPECT_LT(t->MemoryBytes(), rows_bytes + 1000 * 40);
  const MetricLabels label = {{"table", "7"}};
  EXPECT_EQ(*metrics.Value("petrel_table_keys", label), 1000);
  EXPECT_EQ(*metrics.Value("petrel_table_memory_bytes", label),
            static_cast<double>(t->MemoryBytes()));
  EXPECT_EQ(*metrics.Value("petrel_table_pulls_total", label), 1);
  EXPECT_EQ(*metrics.Value("petrel_table_pulled_keys_total", label), 1000);
  EXPECT_EQ(*metrics.Value("petrel_table_pulled_bytes_total", label),
            1000 * 4 * sizeof(float));
  ASSERT_TRUE(t->Push(std::vector<uint64_t>{1, 2}, std::vector<float>(8)).ok());
  EXPECT_EQ(*metrics.Value("petrel_table_pushes_total", label), 1);
  EXPECT_EQ(*metrics.Value("petrel_table_pushed_keys_total", label), 2);
  EXPECT_EQ(*metrics.Value("petrel_table_pushed_bytes_total", label), 32);
}

TEST(TableTest, RejectsBadOptions) {
  TableOptions o = Sparse(0);
  EXPECT_EQ(Table::Create(o).status().code(),
            absl::StatusCode::kInvalidArgument);
  o = Sparse(1);
  o.num_shards = 0;
  EXPECT_EQ(Table::Create(o).status().code(),
            absl::StatusCode::kInvalidArgument);
  o = Sparse(1);
  o.optimizer.learning_rate = -1;
  EXPECT_EQ(Table::Create(o).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// A slab of 2^20 rows of 65536 floats (256 GiB) is more than the kernel
// maps under its default overcommit rule: the pull fails with
// ResourceExhausted and leaves no half-made row behind.
TEST(TableTest, OutOfMemoryIsResourceExhausted) {
  TableOptions o = Sparse(65536);
  o.rows_per_slab = 1 << 20;
  std::unique_ptr<Table> table = *Table::Create(o);
  std::vector<float> out(65536);
  const std::vector<uint64_t> keys = {7};
  absl::Status s = table->Pull(keys, absl::MakeSpan(out));
  if (s.ok()) GTEST_SKIP() << "this machine mapped 256 GiB (overcommit on)";
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_EQ(table->Find(7), nullptr);
  EXPECT_EQ(table->num_rows(), 0u);
  int rows = 0;
  table->ForEachRow([&](uint64_t, const float*) { ++rows; });
  EXPECT_EQ(rows, 0);
  s = table->Push(keys, out);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
}

TEST(TableTest, StoredRowsComeInCreationOrderWithTheirState) {
  TableOptions o = Sparse(2);
  o.optimizer.kind = OptimizerKind::kAdagrad;
  o.optimizer.initial_accumulator = 0.25f;
  auto t = Make(o);
  const std::vector<uint64_t> keys = {900, 3, 77, 12345678901ull, 5};
  ASSERT_TRUE(t->Push(keys, std::vector<float>(10, 1.0f)).ok());
  std::vector<uint64_t> seen;
  t->ForEachStoredRow([&](uint64_t key, const float* row) {
    seen.push_back(key);
    EXPECT_LT(row[0], 0.0f);          // stepped
    EXPECT_EQ(row[2], 0.25f + 1.0f);  // accumulator: initial + g^2
  });
  EXPECT_EQ(seen, keys);
}

TEST(TableTest, SetRowsWithAndWithoutState) {
  TableOptions o = Sparse(2);
  o.optimizer.kind = OptimizerKind::kAdagrad;
  o.optimizer.initial_accumulator = 0.25f;
  auto t = Make(o);
  ASSERT_EQ(t->stride(), 4);
  const std::vector<float> rows = {1, 2, 3, 4, 5, 6, 7, 8};
  ASSERT_TRUE(t->SetRows({10, 11}, rows, 4, true).ok());
  EXPECT_EQ(std::vector<float>(t->Find(11), t->Find(11) + 4),
            (std::vector<float>{5, 6, 7, 8}));
  // Weights only, from rows of another stride: fresh accumulators.
  ASSERT_TRUE(t->SetRows({11}, {9, 10, 11}, 3, false).ok());
  EXPECT_EQ(std::vector<float>(t->Find(11), t->Find(11) + 4),
            (std::vector<float>{9, 10, 0.25f, 0.25f}));
  EXPECT_EQ(t->SetRows({1}, {1, 2, 3}, 3, true).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(t->SetRows({1, 2}, {1, 2, 3, 4}, 4, true).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(t->num_rows(), 2u);
}

// The bulk path: rows spread over shards and several slabs (some slabs
// partly filled by earlier calls), keys already present overwritten in
// place, a key given twice ending with its last row; inline and with a
// runner alike. Blocks hand out the same rows as ForEachStoredRow.
TEST(TableTest, SetRowsInBulkAcrossShardsAndSlabs) {
  TableOptions o = Sparse(1);
  o.optimizer.kind = OptimizerKind::kFtrl;
  o.num_shards = 4;
  o.rows_per_slab = 7;
  o.parallel_min_keys = 8;
  ShardPool pool(3);
  ASSERT_TRUE(pool.Start().ok());
  ParallelRunner runner = [&](int n, const std::function<void(int)>& fn) {
    pool.Run(n, fn);
  };
  for (bool parallel : {false, true}) {
    SCOPED_TRACE(parallel ? "with a runner" : "inline");
    auto t = Make(o);
    ASSERT_EQ(t->stride(), 3);
    std::map<uint64_t, std::vector<float>> want;
    std::mt19937_64 rng(3);
    for (int call = 0; call < 6; ++call) {
      std::vector<uint64_t> keys(call == 0 ? 5 : 40);
      for (uint64_t& k : keys) k = rng() % 150;  // repeats across calls
      keys.push_back(keys[0]);                   // and within one
      std::vector<float> values(keys.size() * 3);
      for (float& v : values) v = static_cast<float>(rng() % 1000);
      ASSERT_TRUE(
          t->SetRows(keys, values, 3, true, parallel ? runner : nullptr).ok());
      for (size_t i = 0; i < keys.size(); ++i) {
        want[keys[i]].assign(values.begin() + 3 * i,
                             values.begin() + 3 * i + 3);
      }
    }
    ASSERT_EQ(t->num_rows(), want.size());
    for (const auto& [key, row] : want) {
      ASSERT_NE(t->Find(key), nullptr) << key;
      EXPECT_EQ(std::vector<float>(t->Find(key), t->Find(key) + 3), row) << key;
    }
    std::vector<std::pair<uint64_t, std::vector<float>>> by_row, by_block;
    t->ForEachStoredRow([&](uint64_t key, const float* row) {
      by_row.push_back({key, std::vector<float>(row, row + 3)});
    });
    t->ForEachStoredBlock(
        [&](const uint64_t* keys, const float* rows, size_t n) {
          EXPECT_LE(n, 7u);
          for (size_t i = 0; i < n; ++i) {
            by_block.push_back(
                {keys[i], std::vector<float>(rows + 3 * i, rows + 3 * i + 3)});
          }
        });
    EXPECT_EQ(by_row.size(), want.size());
    EXPECT_EQ(by_block, by_row);
  }
  pool.Stop();
}

}  // namespace
}  // namespace petrel
