// CPU Gemm at the shapes of the embedding + MLP model's layers at batch
// 1024: 637 -> 256 (39 fields x dim 16 + 13 numeric), 256 -> 128 and
// 128 -> 1, each as the forward (y = x W), the weight gradient
// (dW = x^T dy) and the input gradient (dx = dy W^T). Counter FLOP/s is
// 2 m n k per call. Run:
//   build/kernels/dense_benchmark --benchmark_min_time=0.2
// CPU time per call and rate, RelWithDebInfo, on the shared 2-core AMD EPYC
// dev VM (load ~3, so +-15%), through the x86-64-v3 (AVX2 + FMA) clone:
//   637 -> 256: forward 4.0 ms (80 GFLOP/s), dW 4.8-6.0 ms (56-70),
//               dx 4.0-4.9 ms (68-84)
//   256 -> 128: forward 0.80 ms (83), dW 0.85 ms (79), dx 0.76 ms (84-88)
//   128 -> 1:   forward 75 us (3.4), dW 85 us (3.1), dx 22 us (11): n or k
//               of 1 wastes the 6 x 16 tile and packing dominates; still
//               ~1% of a batch's GEMM time.
// A batch of 1024 thus spends ~17 ms in the three layers' GEMMs.
#include <random>
#include <vector>

#include "benchmark/benchmark.h"

#include "kernels/dense.h"
#include "kernels/testing/random_batch.h"

namespace petrel {
namespace {

constexpr size_t kBatch = 1024;

enum Pass { kForward = 0, kWeightGrad = 1, kInputGrad = 2 };

// args: in, out, pass.
void BM_Gemm(benchmark::State& state) {
  const size_t in = static_cast<size_t>(state.range(0));
  const size_t out = static_cast<size_t>(state.range(1));
  const auto pass = static_cast<Pass>(state.range(2));
  std::mt19937_64 rng(42);
  const auto x = testing::RandomNonZero(kBatch * in, 0.01f, 1.0f, &rng);
  const auto w = testing::RandomNonZero(in * out, 0.01f, 1.0f, &rng);
  const auto dy = testing::RandomNonZero(kBatch * out, 0.01f, 1.0f, &rng);
  std::vector<float> c(pass == kWeightGrad ? in * out
                       : pass == kForward  ? kBatch * out
                                           : kBatch * in);
  const Device cpu = Device::Cpu();
  for (auto _ : state) {
    absl::Status s;
    switch (pass) {
      case kForward:  // [batch x in] [in x out]
        s = Gemm(cpu, false, false, kBatch, out, in, 1.0f, x, w, 0.0f,
                 absl::MakeSpan(c));
        break;
      case kWeightGrad:  // [in x batch] [batch x out]
        s = Gemm(cpu, true, false, in, out, kBatch, 1.0f, x, dy, 0.0f,
                 absl::MakeSpan(c));
        break;
      case kInputGrad:  // [batch x out] [out x in]
        s = Gemm(cpu, false, true, kBatch, in, out, 1.0f, dy, w, 0.0f,
                 absl::MakeSpan(c));
        break;
    }
    benchmark::DoNotOptimize(s);
    benchmark::ClobberMemory();
  }
  state.counters["FLOP/s"] = benchmark::Counter(
      2.0 * kBatch * in * out, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Gemm)
    ->ArgNames({"in", "out", "pass"})
    ->ArgsProduct({{637}, {256}, {kForward, kWeightGrad, kInputGrad}})
    ->ArgsProduct({{256}, {128}, {kForward, kWeightGrad, kInputGrad}})
    ->ArgsProduct({{128}, {1}, {kForward, kWeightGrad, kInputGrad}});

}  // namespace
}  // namespace petrel
