// CPU Gemm at the shapes of the embedding + MLP model's layers at batch
// 1024: 637 -> 256 (39 fields x dim 16 + 13 numeric), 256 -> 128 and
// 128 -> 1, each as the forward (y = x W), the weight gradient
// (dW = x^T dy) and the input gradient (dx = dy W^T), through each CPU
// kernel (internal::GemmKernel: 0 portable, 1 AVX-512; a kernel this CPU
// lacks is reported as an error). Counter FLOP/s is 2 m n k per call. Run:
//   build/kernels/dense_benchmark --benchmark_min_time=0.3
// CPU time per call (medians of 3 runs), RelWithDebInfo, on the shared
// 2-core Intel Xeon dev VM with AVX-512 under load ~5 (+-15%); a loop of
// independent AVX-512 FMAs peaks at ~174 GFLOP/s there:
//                 637 -> 256: forward  dW       dx       256 -> 128: fwd  dW
//   portable (AVX2 clone)     6.4 ms   7.0 ms   5.9 ms    1.26 ms  1.39 ms
//                             (52 GFLOP/s) (48) (57)      (53)     (48)
//   AVX-512                   2.2 ms   2.6 ms   2.3 ms    0.44 ms  0.49 ms
//                             (151)    (128)    (148)     (155)    (137)
// 128 -> 1 (an n or k of 1 wastes most of a tile): 52, 69 and 28 us with
// AVX-512, 114, 135 and 36 us portable. A batch of 1024 thus spends ~8.5 ms
// in the three layers' GEMMs with AVX-512, ~22 ms with the portable kernel.
#include <random>
#include <vector>

#include "benchmark/benchmark.h"

#include "kernels/internal/dense_cpu.h"
#include "kernels/testing/random_batch.h"

namespace petrel {
namespace {

constexpr size_t kBatch = 1024;

enum Pass { kForward = 0, kWeightGrad = 1, kInputGrad = 2 };

// args: in, out, pass, kernel.
void BM_Gemm(benchmark::State& state) {
  const size_t in = static_cast<size_t>(state.range(0));
  const size_t out = static_cast<size_t>(state.range(1));
  const auto pass = static_cast<Pass>(state.range(2));
  const auto kernel = static_cast<internal::GemmKernel>(state.range(3));
  if (!internal::GemmKernelAvailable(kernel)) {
    state.SkipWithError("this build or CPU lacks the kernel");
    return;
  }
  std::mt19937_64 rng(42);
  const auto x = testing::RandomNonZero(kBatch * in, 0.01f, 1.0f, &rng);
  const auto w = testing::RandomNonZero(in * out, 0.01f, 1.0f, &rng);
  const auto dy = testing::RandomNonZero(kBatch * out, 0.01f, 1.0f, &rng);
  std::vector<float> c(pass == kWeightGrad ? in * out
                       : pass == kForward  ? kBatch * out
                                           : kBatch * in);
  for (auto _ : state) {
    switch (pass) {
      case kForward:  // [batch x in] [in x out]
        internal::GemmCpuWith(kernel, false, false, kBatch, out, in, 1.0f, x, w,
                              0.0f, absl::MakeSpan(c));
        break;
      case kWeightGrad:  // [in x batch] [batch x out]
        internal::GemmCpuWith(kernel, true, false, in, out, kBatch, 1.0f, x, dy,
                              0.0f, absl::MakeSpan(c));
        break;
      case kInputGrad:  // [batch x out] [out x in]
        internal::GemmCpuWith(kernel, false, true, kBatch, in, out, 1.0f, dy, w,
                              0.0f, absl::MakeSpan(c));
        break;
    }
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  state.counters["FLOP/s"] = benchmark::Counter(
      2.0 * kBatch * in * out, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Gemm)
    ->ArgNames({"in", "out", "pass", "kernel"})
    ->ArgsProduct({{637}, {256}, {kForward, kWeightGrad, kInputGrad}, {0, 1}})
    ->ArgsProduct({{256}, {128}, {kForward, kWeightGrad, kInputGrad}, {0, 1}})
    ->ArgsProduct({{128}, {1}, {kForward, kWeightGrad, kInputGrad}, {0, 1}});

}  // namespace
}  // namespace petrel
