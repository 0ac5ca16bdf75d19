// Embedding pooling on CUDA (kernels/embedding.h).
//
// Forward: each example is handled by one row of threads of a block (a
// block holds blockDim.y examples), one thread per embedding column, so a
// thread owns out[i, f, c] for every field f and no atomics are needed; a
// thread walks the example's positions in order, like the CPU.
//
// Backward, fast mode: the same layout scatters values * grad_out into
// grad_rows with atomicAdd (the order of the additions varies).
// Deterministic mode: a stable radix sort of the positions by row, then one
// thread per (row, column) sums that row's positions in position order,
// which is also the CPU's order.
//
// Mean pooling counts each example's positions per field in shared memory
// (blockDim.y * num_fields counters).
//
// Scratch: slot 0 holds CUB's temporary storage, slot 1 the deterministic
// backward's per-position arrays and row bounds.
#include <algorithm>
#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

#include "kernels/cuda_status.h"
#include "kernels/internal/cuda_ops.h"
#include "kernels/internal/field_batch_raw.h"
#include <cub/device/device_radix_sort.cuh>

namespace petrel {
namespace internal {
namespace {

constexpr size_t kMaxSharedBytes = 48 * 1024;

// The batch plus the pooling's shape.
struct PoolArgs : FieldBatchRaw {
  size_t dim;
  bool mean;
};

PoolArgs MakeArgs(const FieldBatchView& batch, size_t dim, Pooling pooling) {
  PoolArgs a;
  static_cast<FieldBatchRaw&>(a) = RawOf(batch);
  a.dim = dim;
  a.mean = pooling == Pooling::kMean;
  return a;
}

struct Launch {
  dim3 block;
  unsigned grid = 1;
  size_t shared = 0;
};

// blockDim.x threads per column group, blockDim.y items (examples or rows)
// per block. REQUIRES: dim > 0.
absl::StatusOr<Launch> LaunchFor(size_t items, size_t dim, size_t num_fields,
                                 bool need_counts) {
  const unsigned bx =
      static_cast<unsigned>(std::min<size_t>((dim + 31) / 32 * 32, 256));
  unsigned by = std::max(1u, 256u / bx);
  Launch l;
  if (need_counts) {
    if (num_fields * sizeof(uint32_t) > kMaxSharedBytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "mean pooling on CUDA supports at most ",
          kMaxSharedBytes / sizeof(uint32_t), " fields, not ", num_fields));
    }
    while (by > 1 && by * num_fields * sizeof(uint32_t) > kMaxSharedBytes) {
      by /= 2;
    }
    l.shared = by * num_fields * sizeof(uint32_t);
  }
  l.block = dim3(bx, by, 1);
  l.grid = static_cast<unsigned>(
      std::max<size_t>(1, std::min<size_t>((items + by - 1) / by, 8192)));
  return l;
}

// Counts example i's positions per field into counts[0 .. num_fields-1]
// (shared memory of this thread row). Every thread of the block must call
// it the same number of times (it synchronizes the block).
__device__ void CountFields(const PoolArgs& a, size_t begin, size_t end,
                            uint32_t* counts) {
  __syncthreads();  // the previous example's readers are done
  for (size_t f = threadIdx.x; f < a.num_fields; f += blockDim.x) {
    counts[f] = 0;
  }
  __syncthreads();
  for (size_t j = begin + threadIdx.x; j < end; j += blockDim.x) {
    atomicAdd(&counts[a.fields[j]], 1u);
  }
  __syncthreads();
}

// Calls body(i, begin, end, counts) for each example i of this thread row
// (blocks of blockDim.y examples, grid-stride), whose positions are
// [begin, end); with mean pooling counts[f] holds example i's positions in
// field f. Every thread of the block must call it (CountFields
// synchronizes the block).
template <typename Body>
__device__ __forceinline__ void ForEachExample(const PoolArgs& a, Body body) {
  extern __shared__ uint32_t shared_counts[];
  uint32_t* counts = shared_counts + threadIdx.y * a.num_fields;
  for (size_t base = size_t{blockIdx.x} * blockDim.y; base < a.examples;
       base += size_t{gridDim.x} * blockDim.y) {
    const size_t i = base + threadIdx.y;
    const bool active = i < a.examples;
    const size_t begin = active ? a.offsets[i] : 0;
    const size_t end = active ? a.offsets[i + 1] : 0;
    if (a.mean) CountFields(a, begin, end, counts);
    if (active) body(i, begin, end, counts);
  }
}

__global__ void PoolForwardKernel(PoolArgs a, const float* rows, float* out) {
  const size_t width = a.num_fields * a.dim;
  ForEachExample(
      a, [&](size_t i, size_t begin, size_t end, const uint32_t* counts) {
        float* out_i = out + i * width;
        for (size_t c = threadIdx.x; c < a.dim; c += blockDim.x) {
          for (size_t f = 0; f < a.num_fields; ++f) out_i[f * a.dim + c] = 0.0f;
          // Runs of positions of the same field add up in a register; the sum
          // is still formed left to right, as on the CPU.
          uint32_t current = 0;
          float acc = 0.0f;
          bool open = false;
          for (size_t j = begin; j < end; ++j) {
            const uint32_t f = a.fields[j];
            if (open && f != current) {
              out_i[current * a.dim + c] += acc;
              acc = 0.0f;
            }
            current = f;
            open = true;
            acc += a.values[j] * rows[size_t{a.inverse[j]} * a.dim + c];
          }
          if (open) out_i[current * a.dim + c] += acc;
          if (a.mean) {
            for (size_t f = 0; f < a.num_fields; ++f) {
              if (counts[f] > 1) out_i[f * a.dim + c] /= counts[f];
            }
          }
        }
      });
}

__global__ void PoolBackwardAtomicKernel(PoolArgs a, const float* grad_out,
                                         float* grad_rows) {
  const size_t width = a.num_fields * a.dim;
  ForEachExample(
      a, [&](size_t i, size_t begin, size_t end, const uint32_t* counts) {
        const float* g_i = grad_out + i * width;
        for (size_t j = begin; j < end; ++j) {
          const uint32_t f = a.fields[j];
          float scale = a.values[j];
          if (a.mean) scale /= counts[f];
          float* dst = grad_rows + size_t{a.inverse[j]} * a.dim;
          for (size_t c = threadIdx.x; c < a.dim; c += blockDim.x) {
            atomicAdd(&dst[c], scale * g_i[f * a.dim + c]);
          }
        }
      });
}

// Per position j: its example ex[j] and its scale (values[j], divided by
// the count of its (example, field) for mean pooling).
__global__ void PositionInfoKernel(PoolArgs a, uint32_t* ex, float* scale) {
  ForEachExample(
      a, [&](size_t i, size_t begin, size_t end, const uint32_t* counts) {
        for (size_t j = begin + threadIdx.x; j < end; j += blockDim.x) {
          ex[j] = static_cast<uint32_t>(i);
          float s = a.values[j];
          if (a.mean) s /= counts[a.fields[j]];
          scale[j] = s;
        }
      });
}

__global__ void IotaKernel(uint32_t* out, size_t n) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x) {
    out[i] = static_cast<uint32_t>(i);
  }
}

// row_begin/row_end[r] bound row r's run in the sorted rows (both 0, an
// empty run, for rows no position names: the caller zeroes them).
__global__ void RowBoundsKernel(const uint32_t* sorted_rows, size_t n,
                                uint32_t* row_begin, uint32_t* row_end) {
  for (size_t s = blockIdx.x * size_t{blockDim.x} + threadIdx.x; s < n;
       s += size_t{gridDim.x} * blockDim.x) {
    const uint32_t r = sorted_rows[s];
    if (s == 0 || sorted_rows[s - 1] != r) {
      row_begin[r] = static_cast<uint32_t>(s);
    }
    if (s + 1 == n || sorted_rows[s + 1] != r) {
      row_end[r] = static_cast<uint32_t>(s + 1);
    }
  }
}

// grad_rows[u, c] = sum over u's positions, in position order.
__global__ void RowSumKernel(PoolArgs a, size_t num_rows,
                             const uint32_t* row_begin, const uint32_t* row_end,
                             const uint32_t* sorted_pos, const uint32_t* ex,
                             const float* scale, const float* grad_out,
                             float* grad_rows) {
  const size_t width = a.num_fields * a.dim;
  for (size_t u = size_t{blockIdx.x} * blockDim.y + threadIdx.y; u < num_rows;
       u += size_t{gridDim.x} * blockDim.y) {
    const size_t begin = row_begin[u];
    const size_t end = row_end[u];
    for (size_t c = threadIdx.x; c < a.dim; c += blockDim.x) {
      float sum = 0.0f;
      for (size_t s = begin; s < end; ++s) {
        const uint32_t j = sorted_pos[s];
        sum += scale[j] *
               grad_out[ex[j] * width + size_t{a.fields[j]} * a.dim + c];
      }
      grad_rows[u * a.dim + c] = sum;
    }
  }
}

absl::Status BackwardDeterministic(const Device& device, const PoolArgs& a,
                                   size_t nnz, size_t num_rows,
                                   const float* grad_out, float* grad_rows) {
  cudaStream_t stream = StreamOf(device);
  CudaContext* ctx = device.cuda();
  const size_t pos_bytes = AlignUp256(nnz * sizeof(uint32_t));
  const size_t row_bytes = AlignUp256(num_rows * sizeof(uint32_t));
  absl::StatusOr<void*> arrays = ctx->Scratch(1, 5 * pos_bytes + 2 * row_bytes);
  if (!arrays.ok()) return arrays.status();
  char* p = static_cast<char*>(*arrays);
  uint32_t* positions = reinterpret_cast<uint32_t*>(p);
  uint32_t* sorted_rows = reinterpret_cast<uint32_t*>(p + pos_bytes);
  uint32_t* sorted_pos = reinterpret_cast<uint32_t*>(p + 2 * pos_bytes);
  uint32_t* ex = reinterpret_cast<uint32_t*>(p + 3 * pos_bytes);
  float* scale = reinterpret_cast<float*>(p + 4 * pos_bytes);
  uint32_t* row_begin = reinterpret_cast<uint32_t*>(p + 5 * pos_bytes);
  uint32_t* row_end =
      reinterpret_cast<uint32_t*>(p + 5 * pos_bytes + row_bytes);

  int end_bit = 1;  // enough bits for every row index < num_rows
  while (end_bit < 32 && (uint64_t{1} << end_bit) < num_rows) ++end_bit;
  size_t temp_bytes = 0;
  PETREL_CUDA_RETURN_IF_ERROR(cub::DeviceRadixSort::SortPairs(
      nullptr, temp_bytes, a.inverse, sorted_rows, positions, sorted_pos, nnz,
      0, end_bit, stream));
  absl::StatusOr<void*> temp = ctx->Scratch(0, temp_bytes);
  if (!temp.ok()) return temp.status();

  absl::StatusOr<Launch> per_example =
      LaunchFor(a.examples, 32, a.num_fields, a.mean);
  if (!per_example.ok()) return per_example.status();
  PositionInfoKernel<<<per_example->grid, per_example->block,
                       per_example->shared, stream>>>(a, ex, scale);
  PETREL_CUDA_RETURN_IF_LAUNCH_ERROR("PositionInfoKernel");
  const unsigned grid = GridFor(nnz, 256);
  IotaKernel<<<grid, 256, 0, stream>>>(positions, nnz);
  PETREL_CUDA_RETURN_IF_LAUNCH_ERROR("IotaKernel");
  PETREL_CUDA_RETURN_IF_ERROR(cub::DeviceRadixSort::SortPairs(
      *temp, temp_bytes, a.inverse, sorted_rows, positions, sorted_pos, nnz, 0,
      end_bit, stream));
  PETREL_CUDA_RETURN_IF_ERROR(
      cudaMemsetAsync(row_begin, 0, 2 * row_bytes, stream));
  RowBoundsKernel<<<grid, 256, 0, stream>>>(sorted_rows, nnz, row_begin,
                                            row_end);
  PETREL_CUDA_RETURN_IF_LAUNCH_ERROR("RowBoundsKernel");
  absl::StatusOr<Launch> per_row = LaunchFor(num_rows, a.dim, 0, false);
  if (!per_row.ok()) return per_row.status();
  RowSumKernel<<<per_row->grid, per_row->block, 0, stream>>>(
      a, num_rows, row_begin, row_end, sorted_pos, ex, scale, grad_out,
      grad_rows);
  PETREL_CUDA_RETURN_IF_LAUNCH_ERROR("RowSumKernel");
  return absl::OkStatus();
}

}  // namespace

absl::Status EmbeddingPoolForwardCuda(const Device& device,
                                      const FieldBatchView& batch,
                                      absl::Span<const float> rows, size_t dim,
                                      Pooling pooling, absl::Span<float> out) {
  const PoolArgs a = MakeArgs(batch, dim, pooling);
  if (a.examples == 0 || dim == 0 || a.num_fields == 0) {
    return absl::OkStatus();  // out is empty
  }
  absl::StatusOr<Launch> l = LaunchFor(a.examples, dim, a.num_fields, a.mean);
  if (!l.ok()) return l.status();
  PoolForwardKernel<<<l->grid, l->block, l->shared, StreamOf(device)>>>(
      a, rows.data(), out.data());
  PETREL_CUDA_RETURN_IF_LAUNCH_ERROR("PoolForwardKernel");
  return absl::OkStatus();
}

absl::Status EmbeddingPoolBackwardCuda(const Device& device,
                                       const FieldBatchView& batch,
                                       absl::Span<const float> grad_out,
                                       size_t dim, Pooling pooling,
                                       bool deterministic,
                                       absl::Span<float> grad_rows) {
  if (dim == 0 || grad_rows.empty()) return absl::OkStatus();
  const PoolArgs a = MakeArgs(batch, dim, pooling);
  const size_t nnz = batch.sparse.nnz();
  const size_t num_rows = grad_rows.size() / dim;
  cudaStream_t stream = StreamOf(device);
  if (nnz == 0 || a.examples == 0) {
    PETREL_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(
        grad_rows.data(), 0, grad_rows.size() * sizeof(float), stream));
    return absl::OkStatus();
  }
  if (deterministic) {
    return BackwardDeterministic(device, a, nnz, num_rows, grad_out.data(),
                                 grad_rows.data());
  }
  absl::StatusOr<Launch> l = LaunchFor(a.examples, dim, a.num_fields, a.mean);
  if (!l.ok()) return l.status();
  PETREL_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(
      grad_rows.data(), 0, grad_rows.size() * sizeof(float), stream));
  PoolBackwardAtomicKernel<<<l->grid, l->block, l->shared, stream>>>(
      a, grad_out.data(), grad_rows.data());
  PETREL_CUDA_RETURN_IF_LAUNCH_ERROR("PoolBackwardAtomicKernel");
  return absl::OkStatus();
}

}  // namespace internal
}  // namespace petrel
