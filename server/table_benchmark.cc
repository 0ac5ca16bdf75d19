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
//
// BM_MemoryPerRow and BM_ZipfStreamUnderCap measure memory, not time
// (docs/memory.md): see their comments.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "glog/logging.h"

#include "base/shard_pool.h"
#include "base/zipf_sampler.h"
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

// Memory per row as the table accounts it (Table::MemoryBytes: slabs,
// index, row tracking), against the slab store's ideal of the row's floats
// alone. Args: dim, optimizer (0 SGD: no state, 1 Adagrad: dim floats of
// state), tracked (1: a memory cap far above the rows, so rows carry their
// key and last touch), rows. Counters: bytes_per_row, ideal_per_row
// (stride * 4), overhead_per_row (their difference).
void BM_MemoryPerRow(benchmark::State& state) {
  TableOptions o;
  o.dim = static_cast<int>(state.range(0));
  o.optimizer.kind =
      state.range(1) == 0 ? OptimizerKind::kSgd : OptimizerKind::kAdagrad;
  o.num_shards = 4;
  o.rows_per_slab = 0;  // TableServer's default: 2 MiB slabs
  const size_t rows = static_cast<size_t>(state.range(3));
  if (state.range(2) != 0) o.memory_cap_bytes = uint64_t{64} << 30;
  size_t bytes = 0;
  int stride = 0;
  for (auto _ : state) {
    auto table = Table::Create(o);
    CHECK(table.ok()) << table.status();
    std::mt19937_64 rng(3);
    std::vector<uint64_t> keys(1 << 16);
    std::vector<float> out(keys.size() * o.dim);
    for (size_t done = 0; done < rows; done += keys.size()) {
      for (uint64_t& k : keys) k = rng();
      CHECK((*table)->Pull(keys, absl::MakeSpan(out)).ok());
    }
    bytes = (*table)->MemoryBytes();
    stride = (*table)->stride();
    CHECK_EQ((*table)->num_rows(), rows);
  }
  const double per_row = static_cast<double>(bytes) / rows;
  state.counters["bytes_per_row"] = per_row;
  state.counters["ideal_per_row"] = stride * 4.0;
  state.counters["overhead_per_row"] = per_row - stride * 4.0;
}

BENCHMARK(BM_MemoryPerRow)
    ->Args({1, 0, 0, 1 << 22})
    ->Args({1, 0, 1, 1 << 22})
    ->Args({1, 1, 0, 1 << 22})
    ->Args({1, 1, 1, 1 << 22})
    ->Args({16, 1, 0, 1 << 20})
    ->Args({16, 1, 1, 1 << 20})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

// Resident memory of this process (VmRSS) and its peak (VmHWM), bytes.
void ReadRss(double* rss, double* peak) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    long kib = 0;
    if (std::sscanf(line.c_str(), "VmRSS: %ld kB", &kib) == 1) {
      *rss = kib * 1024.0;
    }
    if (std::sscanf(line.c_str(), "VmHWM: %ld kB", &kib) == 1) {
      *peak = kib * 1024.0;
    }
  }
}

// A Zipf(0.8) stream of keys over 2^31 ranks (a rank's key is a hash of
// it) through a table with a memory cap, in batches of 16384 draws: each
// batch's distinct keys are pulled and then pushed, as a worker's step
// does (Adagrad, dim 1, 4 shards on a ShardPool of 2, as a server). Runs
// until arg 0 distinct keys have been seen (a bitmap over the ranks, 256
// MiB, counts them); arg 1 is the cap in MiB. Counters: distinct keys,
// draws, the table's largest MemoryBytes after any batch, the cap, rows,
// evictions, the process's RSS and peak RSS (the bitmap's 256 MiB
// included), its RSS before the table was made and what the table added
// to it. The 10^8 run of docs/memory.md:
//   table_benchmark --benchmark_filter='BM_ZipfStreamUnderCap/100000000'
void BM_ZipfStreamUnderCap(benchmark::State& state) {
  const uint64_t target = static_cast<uint64_t>(state.range(0));
  const uint64_t cap = static_cast<uint64_t>(state.range(1)) << 20;
  constexpr int64_t kRanks = int64_t{1} << 31;
  TableOptions o;
  o.dim = 1;
  o.optimizer.kind = OptimizerKind::kAdagrad;
  o.num_shards = 4;
  o.rows_per_slab = 0;
  o.memory_cap_bytes = cap;
  ShardPool pool(2);
  CHECK(pool.Start().ok());
  ParallelRunner runner = [&pool](int n, const std::function<void(int)>& fn) {
    pool.Run(n, fn);
  };
  const ZipfSampler zipf(kRanks, 0.8);
  uint64_t distinct = 0;
  uint64_t draws = 0;
  size_t most_bytes = 0;
  size_t rows = 0;
  uint64_t evicted = 0;
  double rss_before = 0;
  double rss = 0;
  double peak = 0;
  for (auto _ : state) {
    // The bitmap first, every page of it resident: the RSS the table adds
    // is then the RSS at the end less the RSS here.
    std::vector<uint64_t> seen(kRanks / 64, 0);
    ReadRss(&rss_before, &peak);
    auto table = Table::Create(o);
    CHECK(table.ok()) << table.status();
    std::mt19937_64 rng(11);
    std::uniform_real_distribution<double> u01(0.0, 1.0);
    std::vector<uint64_t> keys;
    std::vector<float> vals;
    distinct = draws = most_bytes = 0;
    while (distinct < target) {
      keys.clear();
      for (int i = 0; i < 16384; ++i) {
        const uint64_t rank =
            static_cast<uint64_t>(zipf.Sample([&] { return u01(rng); }) - 1);
        uint64_t& word = seen[rank / 64];
        distinct += (word >> (rank % 64) & 1) == 0;
        word |= uint64_t{1} << (rank % 64);
        uint64_t x = rank * 0x9e3779b97f4a7c15ull;
        keys.push_back(x ^ (x >> 29));
      }
      draws += keys.size();
      std::sort(keys.begin(), keys.end());
      keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
      vals.assign(keys.size(), 0.01f);
      CHECK((*table)->Pull(keys, absl::MakeSpan(vals), runner).ok());
      CHECK((*table)->Push(keys, vals, runner).ok());
      most_bytes = std::max(most_bytes, (*table)->MemoryBytes());
      CHECK_LE((*table)->MemoryBytes(), cap);
    }
    rows = (*table)->num_rows();
    evicted = (*table)->evicted();
    ReadRss(&rss, &peak);
  }
  state.counters["distinct_keys"] = static_cast<double>(distinct);
  state.counters["draws"] = static_cast<double>(draws);
  state.counters["table_bytes_max"] = static_cast<double>(most_bytes);
  state.counters["cap_bytes"] = static_cast<double>(cap);
  state.counters["rows"] = static_cast<double>(rows);
  state.counters["evicted"] = static_cast<double>(evicted);
  state.counters["rss_bytes"] = rss;
  state.counters["rss_peak_bytes"] = peak;
  state.counters["rss_before_table"] = rss_before;
  state.counters["rss_added"] = rss - rss_before;
}

BENCHMARK(BM_ZipfStreamUnderCap)
    ->Args({1000000, 16})
    ->Args({100000000, 256})
    ->Iterations(1)
    ->Unit(benchmark::kSecond);

}  // namespace
}  // namespace petrel
