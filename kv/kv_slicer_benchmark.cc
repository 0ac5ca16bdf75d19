// The worker's side of a request over many small keys: SliceRequest
// (partition by owning server, gather values) and MergePulled (put the
// servers' answers back in the caller's order) of 100,000 keys over 8
// servers (KeyRangeMap::Uniform(8, 32), as the scheduler builds it).
//   Arg 0: floats per key (1 or 16).
//   Arg 1: 0 random keys, 1 the same keys sorted.
// Items are keys; the target is <= 10 ns per key for partition +
// merge (BM_SliceAndMerge). Run:
//   build/kv/kv_slicer_benchmark --benchmark_min_time=0.5
#include <algorithm>
#include <random>
#include <vector>

#include "benchmark/benchmark.h"

#include "kv/kv_slicer.h"
#include "node/node_runtime.h"

namespace petrel {
namespace {

constexpr size_t kKeys = 100000;
constexpr int kServers = 8;

struct Request {
  KeyRangeMap ranges = KeyRangeMap::Uniform(kServers, 32).value();
  SArray<Key> keys;
  SArray<float> vals;
};

Request MakeRequest(const benchmark::State& state, int servers = kServers) {
  // The allocator settings of every Petrel process (petrel-bench,
  // petrel-worker, the daemons): without them glibc maps and faults in
  // each large buffer afresh, which would dominate these figures.
  TuneAllocatorForLargeMessages();
  Request r;
  r.ranges = KeyRangeMap::Uniform(servers, 32).value();
  const size_t dim = static_cast<size_t>(state.range(0));
  std::mt19937_64 rng(42);
  std::vector<Key> keys(kKeys);
  for (Key& k : keys) k = rng() % 100000000;
  if (state.range(1) == 1) std::sort(keys.begin(), keys.end());
  r.keys = SArray<Key>(std::move(keys));
  r.vals = SArray<float>(kKeys * dim, 1.0f);
  return r;
}

// The answers of servers that echo what they were sent.
std::vector<PulledPart> Echo(const std::vector<KVSlice>& slices) {
  std::vector<PulledPart> parts(slices.size());
  for (size_t i = 0; i < slices.size(); ++i) {
    parts[i].vals = slices[i].vals;
  }
  return parts;
}

// A push: partition keys and values.
void BM_Slice(benchmark::State& state) {
  Request r = MakeRequest(state);
  for (auto _ : state) {
    auto slices =
        SliceRequest(r.ranges, r.keys, r.vals.buffer(), sizeof(float), {});
    benchmark::DoNotOptimize(slices->data());
  }
  state.SetItemsProcessed(state.iterations() * kKeys);
}

// A pull's answer: merge the servers' parts into a fresh output.
void BM_Merge(benchmark::State& state) {
  Request r = MakeRequest(state);
  auto slices =
      SliceRequest(r.ranges, r.keys, r.vals.buffer(), sizeof(float), {});
  std::vector<PulledPart> parts = Echo(*slices);
  for (auto _ : state) {
    Buffer out;
    benchmark::DoNotOptimize(
        MergePulled(*slices, parts, kKeys, sizeof(float), &out, nullptr));
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * kKeys);
}

// Partition (keys only, as a pull sends) + merge of the answers.
void BM_SliceAndMerge(benchmark::State& state) {
  Request r = MakeRequest(state);
  auto sent =
      SliceRequest(r.ranges, r.keys, r.vals.buffer(), sizeof(float), {});
  std::vector<PulledPart> parts = Echo(*sent);
  for (auto _ : state) {
    auto slices = SliceRequest(r.ranges, r.keys, Buffer(), sizeof(float), {});
    Buffer out;
    benchmark::DoNotOptimize(
        MergePulled(*slices, parts, kKeys, sizeof(float), &out, nullptr));
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * kKeys);
}

// One server owns every key: the caller's buffers go out as they are.
void BM_SliceOneServer(benchmark::State& state) {
  Request r = MakeRequest(state, /*servers=*/1);
  for (auto _ : state) {
    auto slices =
        SliceRequest(r.ranges, r.keys, r.vals.buffer(), sizeof(float), {});
    benchmark::DoNotOptimize(slices->data());
  }
  state.SetItemsProcessed(state.iterations() * kKeys);
}

void Args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"dim", "sorted"});
  for (int dim : {1, 16}) {
    for (int sorted : {0, 1}) b->Args({dim, sorted});
  }
}

BENCHMARK(BM_SliceAndMerge)->Apply(Args);
BENCHMARK(BM_Slice)->Apply(Args);
BENCHMARK(BM_Merge)->Apply(Args);
BENCHMARK(BM_SliceOneServer)->Args({1, 0})->Args({16, 0});

}  // namespace
}  // namespace petrel
