// KVStore's per-key apply, as a server does it for one request of 100,000
// keys picked at random among the resident keys:
//   BM_PushSum   PreparePush + CommitPush (one index lookup, then the sum),
//                in two passes (one_pass:0) or in one (one_pass:1: the
//                lookups and sums in one walk, after a reservation)
//   BM_Pull      Pull (one index lookup, then the copy out), on the
//                calling thread (threads:1) or with a pull pool of two
//                (threads:2); real time
//   BM_HashMapPushSum  the store KVStoreHandler had before KVStore, for
//                comparison: absl::flat_hash_map<Key, SArray<float>>, a
//                width check then the sum, two lookups per key (10^5 and
//                10^6 resident keys; 10^7 heap rows take too long to build)
//   BM_MemoryFloor  no store: the same random accesses a pull of 10^7
//                resident keys makes, with nothing else. An "index" of
//                the store's size (256 MiB of 64-byte lines, huge pages)
//                holds a row offset per line; each key reads a random
//                index line, then the row it names in a row area of 10^7
//                rows of the width (40 MiB at dim 1, 640 MiB at dim 16),
//                and copies it out, prefetched two stages ahead as Pull
//                does. dim 0: the index line alone. sum:1 adds a row of
//                the request into the row instead (read, add, write back:
//                a push-sum's accesses; with dim 0, into the index line,
//                where the store keeps rows of one value). The store
//                cannot go below this on the machine it runs on.
// Args: resident keys, values per key. The ns_per_key counter is CPU time
// per key of the request. Run:
//   build/kv/kv_store_benchmark --benchmark_min_time=1
// Building the 10^7-key stores takes a few seconds and about 1.2 GB.
//
// On the 2-core dev VM, shared with other builds (load 4-8), CPU ns per
// key, medians of 3 (--benchmark_repetitions=3), resident keys 10^5 / 10^6
// / 10^7: push-sum dim 1: 10 / 29 / 84, dim 16: 23 / 33 / 102; pull dim
// 1: 12 / 23 / 90, dim 16: 19 / 30 / 83; the old hash map push-sum,
// dim 1: 62 / 156, dim 16: 250 / 419. In a quieter moment the 10^5 rows
// were 9.4 / 17 (push) and 8.8 / 16 (pull). At 10^7 the prefetches
// themselves stall (perf puts the time on the instruction after them):
// every lookup misses the TLB too, which the VM makes expensive even with
// the guest's 2 MiB pages. The 15 / 25 ns at 10^7 is not met here.
// One pass against two, same run (load 5, medians of 3, CPU ns per key),
// resident 10^5 / 10^6 / 10^7: dim 1: 8.2 / 18 / 38 against 10.8 / 24 /
// 51; dim 16: 13 / 29 / 72 against 18 / 31 / 62 (at 10^7 and dim 16 the
// one pass has both misses of a key in flight at once, and runs from 65
// to 150 ns between runs on this VM).
// The floor (BM_MemoryFloor) against the store at 10^7 resident keys,
// same runs (load 5-8, nice -10, medians of 3 runs of 3 repetitions): the
// accesses alone cost 11 ns (index line only), 16 ns (dim 1) and 30 ns
// (dim 16) per key; Pull 42 / 65 ns, push-sum 45 / 74 ns. So the issue's
// 15 / 25 ns is below what two dependent random accesses cost on this VM
// even in 2 MiB pages, and the store spends 2.2-2.8x the floor (perf puts
// most of Pull's time on its bucket prefetch, i.e. on a full miss queue).
// 2026-12-05, at load 15-30 but under chrt -f 10 (SCHED_FIFO), medians of
// 3: floor 5.2 / 10.0 / 19.5 ns (dims 0 / 1 / 16; the same with 8 to 64
// keys per stage, so 32 misses in flight already saturate it); at 10^7
// resident keys push-sum 17.3 / 24.6 and pull 17.1 / 23.6 ns per key; at
// 10^5, pull 8.8 / 12.3 ns on one thread and 5.8 / 7.4 on two.
// With rows of one float kept in their index slot (same command limited to
// resident:10000000, at load 12-14, main's binary and this one alternated
// twice, medians of 3): dim 1 push-sum 26.3-26.9 -> 19.3-19.7 ns, pull
// 21.6-24.9 -> 19.3-21.8 on one thread and 11.4-14.3 -> 8.4 on two; the
// floor in those runs 12-15 (dim 1) and 6-8 (dim 0).
// On a host with another CPU (AMD EPYC, 2 vCPUs; 2026-12-05, load 1-1.5,
// main's binary and this one alternated 5 times, medians of the runs'
// medians at 10^7 resident keys): prefetch distances 16 -> 32 and the push
// deferring a slab row's lookup past a full home bucket, as Pull does:
// push-sum 16.1 -> 13.4 (dim 1) and 27.5 -> 23.2 ns (dim 16), pull 18.4
// -> 12.4 and 20.8 -> 22.4 (dim 16 within its noise, 18.8-45); floor
// (32 keys per stage) 5.1 / 7.6 / 9.0 ns, with sum:1 4.4 (dim 0) and 14.0
// (dim 16).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "benchmark/benchmark.h"

#include "base/huge_page_memory.h"
#include "base/row_index.h"
#include "base/shard_pool.h"
#include "store/kv_store.h"

namespace petrel {
namespace {

constexpr size_t kRequestKeys = 100000;
constexpr int kRequests = 8;  // distinct requests cycled through

Key KeyOf(uint64_t i) { return i * 0x9E3779B97F4A7C15ull; }

// One store per (resident keys, width), built on first use and kept.
KVStore<float>* ResidentStore(size_t resident, size_t width) {
  static auto* stores =
      new std::map<std::pair<size_t, size_t>, std::unique_ptr<KVStore<float>>>;
  auto& store = (*stores)[{resident, width}];
  if (store == nullptr) {
    store = std::make_unique<KVStore<float>>();
    std::vector<Key> keys;
    std::vector<float> vals(kRequestKeys * width, 1.0f);
    for (size_t b = 0; b < resident; b += kRequestKeys) {
      keys.clear();
      for (size_t i = b; i < resident && i < b + kRequestKeys; ++i) {
        keys.push_back(KeyOf(i));
      }
      vals.resize(keys.size() * width);
      if (!store->Push(keys, vals).ok()) abort();
    }
  }
  return store.get();
}

std::vector<SArray<Key>> Requests(size_t resident) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<uint64_t> pick(0, resident - 1);
  std::vector<SArray<Key>> requests;
  for (int r = 0; r < kRequests; ++r) {
    SArray<Key> keys(kRequestKeys);
    for (Key& k : keys) k = KeyOf(pick(rng));
    requests.push_back(keys);
  }
  return requests;
}

void SetCounters(benchmark::State& state) {
  const double keys = static_cast<double>(state.iterations() * kRequestKeys);
  state.SetItemsProcessed(static_cast<int64_t>(keys));
  state.counters["ns_per_key"] = benchmark::Counter(
      keys * 1e-9, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// PreparePush + CommitPush, in two passes (range(2) 0) or one (1).
void BM_PushSum(benchmark::State& state) {
  const size_t resident = static_cast<size_t>(state.range(0));
  const size_t width = static_cast<size_t>(state.range(1));
  KVStore<float>* store = ResidentStore(resident, width);
  store->set_one_pass_push(state.range(2) != 0);
  const std::vector<SArray<Key>> requests = Requests(resident);
  const std::vector<float> vals(kRequestKeys * width, 0.5f);
  int r = 0;
  for (auto _ : state) {
    const SArray<Key>& keys = requests[r++ % kRequests];
    if (!store->PreparePush(keys, vals).ok()) abort();
    if (store->one_pass_prepared() != (state.range(2) != 0)) abort();
    store->CommitPush();
  }
  store->set_one_pass_push(true);
  SetCounters(state);
}

// range(2): threads walking the pull (KVStore::set_pull_pool).
void BM_Pull(benchmark::State& state) {
  const size_t resident = static_cast<size_t>(state.range(0));
  const size_t width = static_cast<size_t>(state.range(1));
  KVStore<float>* store = ResidentStore(resident, width);
  ShardPool pool(static_cast<int>(state.range(2)));
  if (!pool.Start().ok()) abort();
  store->set_pull_pool(&pool);
  const std::vector<SArray<Key>> requests = Requests(resident);
  int r = 0;
  for (auto _ : state) {
    KVPairs<float> out = store->Pull(requests[r++ % kRequests]);
    benchmark::DoNotOptimize(out.vals.data());
  }
  store->set_pull_pool(nullptr);
  SetCounters(state);
}

void BM_HashMapPushSum(benchmark::State& state) {
  const size_t resident = static_cast<size_t>(state.range(0));
  const size_t width = static_cast<size_t>(state.range(1));
  absl::flat_hash_map<Key, SArray<float>> store;
  for (size_t i = 0; i < resident; ++i) {
    store[KeyOf(i)] = SArray<float>(width, 1.0f);
  }
  const std::vector<SArray<Key>> requests = Requests(resident);
  const std::vector<float> vals(kRequestKeys * width, 0.5f);
  int r = 0;
  for (auto _ : state) {
    const SArray<Key>& keys = requests[r++ % kRequests];
    for (Key k : keys) {  // CheckWidths
      auto it = store.find(k);
      if (it != store.end() && it->second.size() != width) abort();
    }
    const float* src = vals.data();
    for (Key k : keys) {  // Apply
      SArray<float>& row = store[k];
      for (size_t j = 0; j < width; ++j) row[j] += src[j];
      src += width;
    }
  }
  SetCounters(state);
}

void BM_MemoryFloor(benchmark::State& state) {
  constexpr size_t kIndexBytes = size_t{256} << 20;
  constexpr size_t kRows = 10000000;
  constexpr size_t kLine = 64;
  constexpr size_t kDistance = 32;  // KVStore's distances
  const size_t width = static_cast<size_t>(state.range(0));
  const size_t row_bytes = std::max<size_t>(width, 1) * sizeof(float);
  absl::StatusOr<HugePageMemory> index =
      HugePageMemory::Map(kIndexBytes, /*advise=*/true);
  absl::StatusOr<HugePageMemory> rows =
      HugePageMemory::Map(kRows * row_bytes, /*advise=*/true);
  if (!index.ok() || !rows.ok()) {
    state.SkipWithError("out of memory");
    return;
  }
  char* const lines = static_cast<char*>(index->data());
  char* const row_area = static_cast<char*>(rows->data());
  std::memset(row_area, 1, kRows * row_bytes);
  std::mt19937_64 rng(7);
  const size_t num_lines = kIndexBytes / kLine;
  for (size_t l = 0; l < num_lines; ++l) {
    const uint64_t offset = width == 0 ? 0 : (rng() % kRows) * row_bytes;
    std::memcpy(lines + l * kLine, &offset, sizeof(offset));
  }
  std::vector<std::vector<uint64_t>> requests(kRequests);
  for (auto& request : requests) {
    for (size_t i = 0; i < kRequestKeys; ++i) {
      request.push_back((rng() % num_lines) * kLine);
    }
  }
  const bool sum = state.range(1) != 0;
  std::vector<char> out(kRequestKeys * row_bytes);
  std::vector<float> src(kRequestKeys * std::max<size_t>(width, 1), 0.5f);
  auto row_of = [&](uint64_t line) {
    uint64_t offset;
    std::memcpy(&offset, lines + line, sizeof(offset));
    return row_area + offset;
  };
  int r = 0;
  for (auto _ : state) {
    const std::vector<uint64_t>& keys = requests[r++ % kRequests];
    const size_t n = keys.size();
    char* ring[kDistance];
    for (size_t j = 0; j < 2 * kDistance; ++j) PrefetchLine(lines + keys[j]);
    auto resolve = [&](size_t j) {
      char* row = row_of(keys[j]);
      if (width != 0) PrefetchLine(row);
      ring[j % kDistance] = row;
      if (j + 2 * kDistance < n) PrefetchLine(lines + keys[j + 2 * kDistance]);
    };
    for (size_t j = 0; j < kDistance; ++j) resolve(j);
    for (size_t i = 0; i < n; ++i) {
      if (sum && width == 0) {  // a row kept in its index line
        float v;
        char* line = lines + keys[i] + sizeof(uint64_t);
        std::memcpy(&v, line, sizeof(v));
        v += src[i];
        std::memcpy(line, &v, sizeof(v));
      } else if (sum) {  // what a push-sum does: read, add, write back
        float* row = reinterpret_cast<float*>(ring[i % kDistance]);
        const float* add = &src[i * width];
        for (size_t v = 0; v < width; ++v) row[v] += add[v];
      } else {
        std::memcpy(&out[i * row_bytes], ring[i % kDistance], row_bytes);
      }
      if (i + kDistance < n) resolve(i + kDistance);
    }
    benchmark::DoNotOptimize(out.data());
  }
  SetCounters(state);
}

void PullShapes(benchmark::internal::Benchmark* b) {
  for (int64_t resident : {100000, 1000000, 10000000}) {
    for (int64_t width : {1, 16}) {
      for (int64_t threads : {1, 2}) b->Args({resident, width, threads});
    }
  }
  b->ArgNames({"resident", "dim", "threads"});
  b->UseRealTime();  // the pool's threads work too
  b->Unit(benchmark::kMicrosecond);
}

void PushShapes(benchmark::internal::Benchmark* b) {
  for (int64_t resident : {100000, 1000000, 10000000}) {
    for (int64_t width : {1, 16}) {
      for (int64_t one_pass : {0, 1}) b->Args({resident, width, one_pass});
    }
  }
  b->ArgNames({"resident", "dim", "one_pass"});
  b->Unit(benchmark::kMicrosecond);
}

BENCHMARK(BM_PushSum)->Apply(PushShapes);
BENCHMARK(BM_Pull)->Apply(PullShapes);
BENCHMARK(BM_MemoryFloor)
    ->ArgNames({"dim", "sum"})
    ->Args({0, 0})
    ->Args({1, 0})
    ->Args({16, 0})
    ->Args({0, 1})
    ->Args({16, 1})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_HashMapPushSum)
    ->ArgsProduct({{100000, 1000000}, {1, 16}})
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace petrel
