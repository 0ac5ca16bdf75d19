// petrel-cuda-bench: times the CUDA kernels on cuda:0 with cudaEvents on the
// context's stream (deploy/gpu-check.sh runs it).
//
//   embedding gather/pool forward and backward scatter on a Criteo-like
//   batch (39 fields, Zipf keys): achieved GB/s of the bytes a kernel must
//   move at least (indices, gathered rows, outputs; an atomic add counts
//   as a read and a write), against the peak memory bandwidth from
//   cudaDeviceGetAttribute (memory clock x bus width x 2, DDR);
//   GEMM GFLOP/s (2mnk / time) at the MLP's layer shapes and a big square;
//   DedupSorted keys/s.
//
// Usage: petrel-cuda-bench [iterations]   (default 50)
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "absl/status/status.h"

#include "kernels/cuda_context.h"
#include "kernels/dedup.h"
#include "kernels/dense.h"
#include "kernels/device.h"
#include "kernels/device_memory.h"
#include "kernels/embedding.h"
#include "kernels/testing/random_batch.h"

namespace petrel {
namespace {

#define BENCH_CHECK(expr)                                                    \
  do {                                                                       \
    const absl::Status s_ = (expr);                                          \
    if (!s_.ok()) {                                                          \
      std::fprintf(stderr, "%s failed: %s\n", #expr, s_.ToString().c_str()); \
      std::exit(1);                                                          \
    }                                                                        \
  } while (0)

#define BENCH_CUDA(expr)                                                      \
  do {                                                                        \
    const cudaError_t e_ = (expr);                                            \
    if (e_ != cudaSuccess) {                                                  \
      std::fprintf(stderr, "%s failed: %s\n", #expr, cudaGetErrorString(e_)); \
      std::exit(1);                                                           \
    }                                                                         \
  } while (0)

int iterations = 50;

// Mean milliseconds per call of `fn` on the device's stream (after 3
// warm-up calls).
double TimeMs(const Device& device, const std::function<absl::Status()>& fn) {
  cudaStream_t stream = static_cast<cudaStream_t>(device.cuda()->stream());
  for (int i = 0; i < 3; ++i) BENCH_CHECK(fn());
  cudaEvent_t start, stop;
  BENCH_CUDA(cudaEventCreate(&start));
  BENCH_CUDA(cudaEventCreate(&stop));
  BENCH_CUDA(cudaEventRecord(start, stream));
  for (int i = 0; i < iterations; ++i) BENCH_CHECK(fn());
  BENCH_CUDA(cudaEventRecord(stop, stream));
  BENCH_CUDA(cudaEventSynchronize(stop));
  float ms = 0;
  BENCH_CUDA(cudaEventElapsedTime(&ms, start, stop));
  BENCH_CUDA(cudaEventDestroy(start));
  BENCH_CUDA(cudaEventDestroy(stop));
  return ms / iterations;
}

double PeakGBs(int ordinal) {
  int clock_khz = 0, bus_bits = 0;
  BENCH_CUDA(
      cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, ordinal));
  BENCH_CUDA(cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth,
                                    ordinal));
  return 2.0 * clock_khz * 1e3 * (bus_bits / 8.0) / 1e9;
}

template <typename T>
DeviceArray<T> Upload(const Device& d, const std::vector<T>& host) {
  DeviceArray<T> a(d);
  BENCH_CHECK(a.Resize(host.size()));
  BENCH_CHECK(CopyToDevice<T>(d, absl::MakeConstSpan(host), a.span()));
  BENCH_CHECK(Synchronize(d));
  return a;
}

void BenchEmbedding(const Device& gpu, double peak, std::mt19937_64* rng) {
  const size_t examples = 16384;
  testing::RandomBatch batch = testing::MakeBenchmarkBatch(examples, rng);
  const size_t nnz = batch.keys.size();
  const size_t unique = batch.unique.size();
  std::vector<uint32_t> fields(nnz);
  size_t num_fields = 1;
  for (size_t i = 0; i < examples; ++i) {
    for (uint32_t j = batch.offsets[i]; j < batch.offsets[i + 1]; ++j) {
      fields[j] = j - batch.offsets[i];
      num_fields = std::max<size_t>(num_fields, fields[j] + 1);
    }
  }
  DeviceArray<uint32_t> d_offsets = Upload(gpu, batch.offsets),
                        d_inverse = Upload(gpu, batch.inverse),
                        d_fields = Upload(gpu, fields);
  DeviceArray<float> d_values = Upload(gpu, batch.values);
  FieldBatchView view;
  view.sparse.offsets = d_offsets.span();
  view.sparse.inverse = d_inverse.span();
  view.sparse.values = d_values.span();
  view.fields = d_fields.span();
  view.num_fields = num_fields;
  std::printf(
      "embedding: %zu examples, %zu fields, %zu positions, %zu unique "
      "rows\n",
      examples, num_fields, nnz, unique);
  for (size_t dim : {16, 64}) {
    DeviceArray<float> rows =
        Upload(gpu, testing::RandomNonZero(unique * dim, 0.1f, 1, rng));
    DeviceArray<float> out(gpu), grad_rows(gpu);
    BENCH_CHECK(out.Resize(examples * num_fields * dim));
    BENCH_CHECK(grad_rows.Resize(unique * dim));
    const double index_bytes = 12.0 * nnz + 4.0 * (examples + 1);
    const double row_bytes = 4.0 * nnz * dim;  // one row read per position
    const double out_bytes = 4.0 * examples * num_fields * dim;
    const double fwd_ms = TimeMs(gpu, [&] {
      return EmbeddingPoolForward(gpu, view, rows.span(), dim, Pooling::kSum,
                                  out.span());
    });
    const double fwd_bytes = index_bytes + row_bytes + out_bytes;
    // Backward reads grad_out and adds into a row per position (read +
    // write), after zeroing grad_rows.
    const double bwd_bytes =
        index_bytes + out_bytes + 2 * row_bytes + 4.0 * unique * dim;
    const double bwd_ms = TimeMs(gpu, [&] {
      return EmbeddingPoolBackward(gpu, view, out.span(), dim, Pooling::kSum,
                                   false, grad_rows.span());
    });
    const double det_ms = TimeMs(gpu, [&] {
      return EmbeddingPoolBackward(gpu, view, out.span(), dim, Pooling::kSum,
                                   true, grad_rows.span());
    });
    auto report = [&](const char* what, double ms, double bytes) {
      const double gbs = bytes / (ms * 1e-3) / 1e9;
      std::printf("  %-28s dim=%-3zu %8.3f ms %8.1f GB/s (%4.1f%% of peak)\n",
                  what, dim, ms, gbs, 100 * gbs / peak);
    };
    report("forward gather+pool (sum)", fwd_ms, fwd_bytes);
    report("backward scatter (atomic)", bwd_ms, bwd_bytes);
    report("backward (deterministic)", det_ms, bwd_bytes);
  }
}

void BenchGemm(const Device& gpu, std::mt19937_64* rng) {
  struct Shape {
    const char* what;
    bool ta, tb;
    size_t m, n, k;
  };
  const Shape shapes[] = {
      {"mlp fwd 1024x637 * 637x256", false, false, 1024, 256, 637},
      {"mlp fwd 1024x256 * 256x128", false, false, 1024, 128, 256},
      {"mlp fwd 1024x128 * 128x1", false, false, 1024, 1, 128},
      {"mlp dW  637x1024 * 1024x256", true, false, 637, 256, 1024},
      {"mlp dX  1024x256 * 256x637", false, true, 1024, 637, 256},
      {"square 8192", false, false, 8192, 8192, 8192},
  };
  for (const Shape& s : shapes) {
    DeviceArray<float> a =
        Upload(gpu, testing::RandomNonZero(s.m * s.k, 0.1f, 1, rng));
    DeviceArray<float> b =
        Upload(gpu, testing::RandomNonZero(s.k * s.n, 0.1f, 1, rng));
    DeviceArray<float> c(gpu);
    BENCH_CHECK(c.Resize(s.m * s.n));
    const double ms = TimeMs(gpu, [&] {
      return Gemm(gpu, s.ta, s.tb, s.m, s.n, s.k, 1.0f, a.span(), b.span(),
                  0.0f, c.span());
    });
    std::printf("  gemm %-30s %8.3f ms %9.1f GFLOP/s\n", s.what, ms,
                2.0 * s.m * s.n * s.k / (ms * 1e-3) / 1e9);
  }
}

void BenchDedup(const Device& gpu, std::mt19937_64* rng) {
  testing::RandomBatch batch =
      testing::MakeCriteoLikeBatch(16384, 1000000, rng);
  const size_t n = batch.keys.size();
  DeviceArray<uint64_t> keys = Upload(gpu, batch.keys);
  DeviceArray<uint64_t> unique(gpu);
  DeviceArray<uint32_t> inverse(gpu);
  BENCH_CHECK(unique.Resize(n));
  BENCH_CHECK(inverse.Resize(n));
  size_t count = 0;
  const double ms = TimeMs(gpu, [&] {
    return DedupSorted(gpu, keys.span(), unique.span(), inverse.span(), &count);
  });
  std::printf(
      "  dedup (sorted, synchronizing) %zu keys -> %zu: %.3f ms, "
      "%.1f Mkeys/s\n",
      n, count, ms, n / (ms * 1e-3) / 1e6);
}

int Main(int argc, char** argv) {
  if (argc > 1) iterations = std::max(1, std::atoi(argv[1]));
  std::string why;
  if (CudaDeviceCount(&why) == 0) {
    std::fprintf(stderr, "petrel-cuda-bench: no CUDA device: %s\n",
                 why.c_str());
    return 1;
  }
  absl::StatusOr<std::unique_ptr<CudaContext>> ctx = CudaContext::Create(0);
  if (!ctx.ok()) {
    std::fprintf(stderr, "%s\n", ctx.status().ToString().c_str());
    return 1;
  }
  const Device gpu = Device::Cuda(ctx->get());
  const double peak = PeakGBs(0);
  std::printf("device %s, peak memory bandwidth %.0f GB/s, %d iterations\n",
              gpu.name().c_str(), peak, iterations);
  std::mt19937_64 rng(42);
  BenchEmbedding(gpu, peak, &rng);
  BenchGemm(gpu, &rng);
  BenchDedup(gpu, &rng);
  return 0;
}

}  // namespace
}  // namespace petrel

int main(int argc, char** argv) { return petrel::Main(argc, argv); }
