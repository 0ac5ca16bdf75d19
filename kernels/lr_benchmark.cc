// LR kernels and sigmoid cross-entropy on one Criteo-like batch of 1024
// examples x 39 features (kernels/testing/random_batch.h). Items are
// examples. BM_LrBatchStep is the worker's whole per-batch compute: dedup,
// forward, loss and backward. Run:
//   build/kernels/lr_benchmark --benchmark_min_time=0.2
#include <random>
#include <vector>

#include "benchmark/benchmark.h"

#include "kernels/dedup.h"
#include "kernels/lr.h"
#include "kernels/sigmoid_cross_entropy.h"
#include "kernels/testing/random_batch.h"

namespace petrel {
namespace {

const Device kCpu = Device::Cpu();

constexpr size_t kExamples = 1024;

struct Fixture {
  testing::RandomBatch batch;
  std::vector<float> w, logits, dlogits, grad;
  Fixture() {
    std::mt19937_64 rng(42);
    batch = testing::MakeBenchmarkBatch(kExamples, &rng);
    w = testing::RandomNonZero(batch.unique.size(), 0.01f, 0.1f, &rng);
    logits.resize(kExamples);
    dlogits = testing::RandomNonZero(kExamples, 0.01f, 1.0f, &rng);
    grad.resize(batch.unique.size());
  }
};

void BM_LrForward(benchmark::State& state) {
  Fixture fx;
  for (auto _ : state) {
    benchmark::DoNotOptimize(LrForward(kCpu, fx.batch.View(), fx.w, 0.1f,
                                       absl::MakeSpan(fx.logits)));
  }
  state.SetItemsProcessed(state.iterations() * kExamples);
}
BENCHMARK(BM_LrForward);

void BM_LrBackward(benchmark::State& state) {
  Fixture fx;
  float grad_bias = 0.0f;
  for (auto _ : state) {
    benchmark::DoNotOptimize(LrBackward(kCpu, fx.batch.View(), fx.dlogits,
                                        absl::MakeSpan(fx.grad), &grad_bias));
  }
  state.SetItemsProcessed(state.iterations() * kExamples);
}
BENCHMARK(BM_LrBackward);

void BM_SigmoidCrossEntropy(benchmark::State& state) {
  Fixture fx;
  std::vector<float> probs(kExamples);
  double loss = 0.0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        SigmoidCrossEntropy(fx.dlogits, fx.batch.labels, absl::MakeSpan(probs),
                            absl::MakeSpan(fx.logits), &loss));
  }
  state.SetItemsProcessed(state.iterations() * kExamples);
}
BENCHMARK(BM_SigmoidCrossEntropy);

void BM_LrBatchStep(benchmark::State& state) {
  Fixture fx;
  testing::RandomBatch& b = fx.batch;
  float grad_bias = 0.0f;
  double loss = 0.0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(Dedup(b.keys, &b.unique, &b.inverse));
    benchmark::DoNotOptimize(
        LrForward(kCpu, b.View(), fx.w, 0.1f, absl::MakeSpan(fx.logits)));
    benchmark::DoNotOptimize(SigmoidCrossEntropy(
        fx.logits, b.labels, {}, absl::MakeSpan(fx.dlogits), &loss));
    benchmark::DoNotOptimize(LrBackward(kCpu, b.View(), fx.dlogits,
                                        absl::MakeSpan(fx.grad), &grad_bias));
  }
  state.SetItemsProcessed(state.iterations() * kExamples);
}
BENCHMARK(BM_LrBatchStep);

}  // namespace
}  // namespace petrel
