// FM kernels on one Criteo-like batch of 1024 examples x 39 features
// (kernels/testing/random_batch.h); the argument is the factor dim k.
// Items are examples. Run:
//   build/kernels/fm_benchmark --benchmark_min_time=0.2
// Forward at -O2 with a run-time k vs -O3 with k a template constant (CPU
// time per batch on the loaded 2-core dev VM): k=8 310 -> ~150 us, k=64
// 2130 -> ~480 us. At k >= 16 the row gathers (19k unique rows) dominate.
#include <random>
#include <vector>

#include "benchmark/benchmark.h"

#include "kernels/fm.h"
#include "kernels/testing/random_batch.h"

namespace petrel {
namespace {

const Device kCpu = Device::Cpu();

constexpr size_t kExamples = 1024;

struct Fixture {
  testing::RandomBatch batch;
  std::vector<float> w, v, logits, sum_vx, dlogits, grad_w, grad_v;
  FmParams params;
  explicit Fixture(size_t k) {
    std::mt19937_64 rng(42);
    batch = testing::MakeBenchmarkBatch(kExamples, &rng);
    const size_t unique = batch.unique.size();
    w = testing::RandomNonZero(unique, 0.01f, 0.1f, &rng);
    v = testing::RandomNonZero(unique * k, 0.01f, 0.1f, &rng);
    logits.resize(kExamples);
    sum_vx.resize(kExamples * k);
    dlogits = testing::RandomNonZero(kExamples, 0.01f, 1.0f, &rng);
    grad_w.resize(unique);
    grad_v.resize(unique * k);
    params.w = w;
    params.v = v;
    params.k = k;
    params.bias = 0.1f;
  }
};

void BM_FmForward(benchmark::State& state) {
  Fixture fx(static_cast<size_t>(state.range(0)));
  for (auto _ : state) {
    benchmark::DoNotOptimize(FmForward(kCpu, fx.batch.View(), fx.params,
                                       absl::MakeSpan(fx.logits),
                                       absl::MakeSpan(fx.sum_vx)));
  }
  state.SetItemsProcessed(state.iterations() * kExamples);
}
BENCHMARK(BM_FmForward)->Arg(4)->Arg(8)->Arg(16)->Arg(64);

void BM_FmBackward(benchmark::State& state) {
  Fixture fx(static_cast<size_t>(state.range(0)));
  float grad_bias = 0.0f;
  benchmark::DoNotOptimize(FmForward(kCpu, fx.batch.View(), fx.params,
                                     absl::MakeSpan(fx.logits),
                                     absl::MakeSpan(fx.sum_vx)));
  for (auto _ : state) {
    benchmark::DoNotOptimize(FmBackward(
        kCpu, fx.batch.View(), fx.params, fx.sum_vx, fx.dlogits,
        absl::MakeSpan(fx.grad_w), absl::MakeSpan(fx.grad_v), &grad_bias));
  }
  state.SetItemsProcessed(state.iterations() * kExamples);
}
BENCHMARK(BM_FmBackward)->Arg(4)->Arg(8)->Arg(16)->Arg(64);

}  // namespace
}  // namespace petrel
