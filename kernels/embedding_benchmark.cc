// Embedding pooling on one Criteo-like batch of 1024 examples x 39 fields
// (kernels/testing/random_batch.h, one position per field, about 19k
// unique rows); the argument is the dim. Bytes/s counts the rows gathered
// (forward) or scattered (backward) plus the pooled values and the batch's
// index arrays. Run:
//   build/kernels/embedding_benchmark --benchmark_min_time=0.2
// CPU time per batch, RelWithDebInfo, shared 2-core AMD EPYC dev VM
// (load ~3, so +-15%); includes the dispatcher's validation (~20 us):
//   forward  dim 8 140 us (20 GB/s), dim 16 218 us (24 GB/s, 4.7M
//            examples/s), dim 64 0.8-1.3 ms (15-22 GB/s)
//   backward dim 8 140 us (20 GB/s), dim 16 205-220 us (24 GB/s),
//            dim 64 0.67 ms (29 GB/s)
// Before AxpyRow's stack copy (embedding_cpu.cc) the row loops stayed
// scalar: forward dim 16 was 400 us.
#include <random>
#include <vector>

#include "benchmark/benchmark.h"

#include "kernels/embedding.h"
#include "kernels/testing/random_batch.h"

namespace petrel {
namespace {

constexpr size_t kExamples = 1024;

struct Fixture {
  testing::RandomBatch batch;
  std::vector<float> rows, out, grad_out, grad_rows;
  size_t dim;
  explicit Fixture(size_t d) : dim(d) {
    std::mt19937_64 rng(42);
    batch = testing::MakeBenchmarkBatch(kExamples, &rng);
    rows = testing::RandomNonZero(batch.unique.size() * dim, 0.01f, 0.1f, &rng);
    out.resize(kExamples * batch.num_fields * dim);
    grad_out = testing::RandomNonZero(out.size(), 0.01f, 0.1f, &rng);
    grad_rows.resize(rows.size());
  }
  // Row values moved through the gather/scatter, the pooled block, and the
  // offsets, inverse, values and fields read.
  int64_t BytesPerCall() const {
    const size_t nnz = batch.keys.size();
    return static_cast<int64_t>(sizeof(float) * (nnz * dim + out.size()) +
                                sizeof(uint32_t) * (kExamples + 1 + 2 * nnz) +
                                sizeof(float) * nnz);
  }
};

void BM_EmbeddingForward(benchmark::State& state) {
  Fixture fx(static_cast<size_t>(state.range(0)));
  const Device cpu = Device::Cpu();
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        EmbeddingPoolForward(cpu, fx.batch.FieldView(), fx.rows, fx.dim,
                             Pooling::kSum, absl::MakeSpan(fx.out)));
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * kExamples);
  state.SetBytesProcessed(state.iterations() * fx.BytesPerCall());
}
BENCHMARK(BM_EmbeddingForward)->Arg(8)->Arg(16)->Arg(64);

void BM_EmbeddingBackward(benchmark::State& state) {
  Fixture fx(static_cast<size_t>(state.range(0)));
  const Device cpu = Device::Cpu();
  for (auto _ : state) {
    benchmark::DoNotOptimize(EmbeddingPoolBackward(
        cpu, fx.batch.FieldView(), fx.grad_out, fx.dim, Pooling::kSum, true,
        absl::MakeSpan(fx.grad_rows)));
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * kExamples);
  state.SetBytesProcessed(state.iterations() * fx.BytesPerCall());
}
BENCHMARK(BM_EmbeddingBackward)->Arg(8)->Arg(16)->Arg(64);

}  // namespace
}  // namespace petrel
