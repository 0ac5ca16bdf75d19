// DedupSorted on CUDA: a radix sort of (key, position) pairs, a head flag
// where each run of equal keys starts, an inclusive scan of the flags (the
// 1-based unique index of every sorted position) and a
// scatter of keys and indices.
//
// Scratch: slot 0 holds CUB's temporary storage, slot 1 the sorted keys,
// sorted positions, flags and ranks.
#include <cstdint>

#include "absl/strings/str_cat.h"

#include "kernels/cuda_status.h"
#include "kernels/internal/cuda_ops.h"
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

namespace petrel {
namespace internal {
namespace {

constexpr unsigned kBlock = 256;

__global__ void IotaKernel(uint32_t* out, size_t n) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x) {
    out[i] = static_cast<uint32_t>(i);
  }
}

__global__ void HeadFlagsKernel(const uint64_t* sorted, size_t n,
                                uint32_t* flags) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x) {
    flags[i] = (i == 0 || sorted[i] != sorted[i - 1]) ? 1u : 0u;
  }
}

// ranks[i] is the inclusive count of run heads up to sorted position i, so
// the key's unique index is ranks[i] - 1.
__global__ void ScatterKernel(const uint64_t* sorted_keys,
                              const uint32_t* sorted_pos, const uint32_t* flags,
                              const uint32_t* ranks, size_t n, uint64_t* unique,
                              uint32_t* inverse) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x) {
    const uint32_t u = ranks[i] - 1;
    inverse[sorted_pos[i]] = u;
    if (flags[i] != 0) unique[u] = sorted_keys[i];
  }
}

}  // namespace

absl::Status DedupSortedCuda(const Device& device,
                             absl::Span<const uint64_t> keys,
                             absl::Span<uint64_t> unique,
                             absl::Span<uint32_t> inverse, size_t* num_unique) {
  const size_t n = keys.size();
  *num_unique = 0;
  if (n == 0) return absl::OkStatus();
  cudaStream_t stream = StreamOf(device);
  CudaContext* ctx = device.cuda();

  // Slot 1: sorted keys [n], sorted positions [n], flags [n], ranks [n].
  const size_t keys_bytes = AlignUp256(n * sizeof(uint64_t));
  const size_t u32_bytes = AlignUp256(n * sizeof(uint32_t));
  absl::StatusOr<void*> arrays = ctx->Scratch(1, keys_bytes + 3 * u32_bytes);
  if (!arrays.ok()) return arrays.status();
  char* base = static_cast<char*>(*arrays);
  uint64_t* sorted_keys = reinterpret_cast<uint64_t*>(base);
  uint32_t* sorted_pos = reinterpret_cast<uint32_t*>(base + keys_bytes);
  uint32_t* flags = reinterpret_cast<uint32_t*>(base + keys_bytes + u32_bytes);
  uint32_t* ranks =
      reinterpret_cast<uint32_t*>(base + keys_bytes + 2 * u32_bytes);
  // The positions to sort go into `inverse`, which the scatter overwrites
  // only after the sort has read them.
  uint32_t* positions = inverse.data();

  size_t sort_bytes = 0;
  size_t scan_bytes = 0;
  PETREL_CUDA_RETURN_IF_ERROR(cub::DeviceRadixSort::SortPairs(
      nullptr, sort_bytes, keys.data(), sorted_keys, positions, sorted_pos, n,
      0, 64, stream));
  PETREL_CUDA_RETURN_IF_ERROR(cub::DeviceScan::InclusiveSum(
      nullptr, scan_bytes, flags, ranks, n, stream));
  size_t temp_bytes = std::max(sort_bytes, scan_bytes);
  absl::StatusOr<void*> temp = ctx->Scratch(0, temp_bytes);
  if (!temp.ok()) return temp.status();

  const unsigned grid = GridFor(n, kBlock);
  IotaKernel<<<grid, kBlock, 0, stream>>>(positions, n);
  PETREL_CUDA_RETURN_IF_LAUNCH_ERROR("IotaKernel");
  PETREL_CUDA_RETURN_IF_ERROR(cub::DeviceRadixSort::SortPairs(
      *temp, temp_bytes, keys.data(), sorted_keys, positions, sorted_pos, n, 0,
      64, stream));
  HeadFlagsKernel<<<grid, kBlock, 0, stream>>>(sorted_keys, n, flags);
  PETREL_CUDA_RETURN_IF_LAUNCH_ERROR("HeadFlagsKernel");
  temp_bytes = std::max(sort_bytes, scan_bytes);
  PETREL_CUDA_RETURN_IF_ERROR(cub::DeviceScan::InclusiveSum(
      *temp, temp_bytes, flags, ranks, n, stream));
  ScatterKernel<<<grid, kBlock, 0, stream>>>(
      sorted_keys, sorted_pos, flags, ranks, n, unique.data(), inverse.data());
  PETREL_CUDA_RETURN_IF_LAUNCH_ERROR("ScatterKernel");

  uint32_t count = 0;
  PETREL_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(
      &count, ranks + (n - 1), sizeof(count), cudaMemcpyDeviceToHost, stream));
  PETREL_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  *num_unique = count;
  return absl::OkStatus();
}

}  // namespace internal
}  // namespace petrel
