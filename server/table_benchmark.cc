// A training table's Pull then Push of one batch's unique keys: the server's
// share of every training step. A batch of LR on libsvm data (1024 examples
// x ~15 features) has about 12,000 unique keys.
//   Args: resident keys, keys per request, threads (1 = inline, 2 = a
//   ShardPool of 2 as TableServer uses on this machine), rows per slab
//   (0 = 2 MiB slabs on huge pages, TableServer's default).
// Items are keys (each pulled once and pushed once). Keys are drawn
// uniformly from the resident ones: every lookup misses the cache, the
// worst case and, with millions of rows, close to the real one. Run:
//   build/server/table_benchmark --benchmark_min_time=0.5
#include <algorithm>
#include <memory>
#include <random>
#include <vector>

#include "benchmark/benchmark.h"
#include "glog/logging.h"

#include "server/shard_pool.h"
#include "server/table.h"

namespace petrel {
namespace {

void BM_PullPush(benchmark::State& state) {
  const size_t resident = static_cast<size_t>(state.range(0));
  const size_t per_request = static_cast<size_t>(state.range(1));
  const int threads = static_cast<int>(state.range(2));
  const int rows_per_slab = static_cast<int>(state.range(3));
  TableOptions o;
  o.dim = 1;
  o.optimizer.kind = OptimizerKind::kAdagrad;
  o.num_shards = 2 * threads;
  o.rows_per_slab = rows_per_slab;
  auto table = Table::Create(o);
  CHECK(table.ok()) << table.status();
  ShardPool pool(threads);
  CHECK(pool.Start().ok());
  ParallelRunner runner;
  if (threads > 1) {
    runner = [&pool](int n, const std::function<void(int)>& fn) {
      pool.Run(n, fn);
    };
  }
  // Hashed-looking keys, as Criteo features are.
  std::mt19937_64 rng(7);
  std::vector<uint64_t> all(resident);
  for (uint64_t& k : all) k = rng();
  std::vector<float> out(resident);
  CHECK((*table)->Pull(all, absl::MakeSpan(out)).ok());
  // Requests of distinct keys (a batch's keys are deduplicated).
  constexpr int kRequests = 64;
  std::vector<std::vector<uint64_t>> requests(kRequests);
  for (auto& r : requests) {
    r.resize(per_request);
    for (uint64_t& k : r) k = all[rng() % resident];
    std::sort(r.begin(), r.end());
    r.erase(std::unique(r.begin(), r.end()), r.end());
  }
  std::vector<float> vals(per_request), grads(per_request, 0.01f);
  size_t i = 0;
  int64_t keys = 0;
  for (auto _ : state) {
    const std::vector<uint64_t>& r = requests[i++ % kRequests];
    absl::Span<float> v(vals.data(), r.size());
    benchmark::DoNotOptimize((*table)->Pull(r, v, runner));
    benchmark::DoNotOptimize(
        (*table)->Push(r, absl::MakeConstSpan(grads.data(), r.size()), runner));
    keys += static_cast<int64_t>(r.size());
  }
  state.SetItemsProcessed(keys);
}

BENCHMARK(BM_PullPush)
    ->Args({1 << 16, 12000, 1, 0})
    ->Args({1 << 20, 12000, 1, 4096})
    ->Args({1 << 20, 12000, 1, 0})
    ->Args({1 << 22, 12000, 1, 4096})
    ->Args({1 << 22, 12000, 1, 0})
    ->Args({1 << 22, 12000, 2, 0})
    ->UseRealTime();

}  // namespace
}  // namespace petrel
