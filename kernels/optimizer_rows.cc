// Dispatchers of kernels/optimizer_rows.h: every size check happens here,
// so the CUDA entry points (kernels/internal/cuda_ops.h) can assume them.
#include "kernels/optimizer_rows.h"

#include "absl/strings/str_cat.h"

#include "base/status_macros.h"
#include "kernels/internal/cuda_ops.h"
#include "kernels/internal/optimizer_rows_cpu.h"
#include "kernels/sparse_batch.h"

namespace petrel {
namespace {

// InvalidArgument unless both state arrays and g have w.size() entries.
absl::Status CheckState(size_t w_size, const char* a_name, size_t a_size,
                        const char* b_name, size_t b_size, size_t g_size) {
  PETREL_RETURN_IF_ERROR(CheckSize(a_name, a_size, w_size));
  PETREL_RETURN_IF_ERROR(CheckSize(b_name, b_size, w_size));
  return CheckSize("g", g_size, w_size);
}

[[maybe_unused]] absl::Status NoCuda() {
  return absl::FailedPreconditionError("no CUDA in this build");
}

}  // namespace

absl::Status AdagradRowUpdate(const Device& device,
                              const AdagradRowParams& params,
                              absl::Span<float> w, absl::Span<float> acc,
                              absl::Span<const float> g) {
  PETREL_RETURN_IF_ERROR(CheckSize("acc", acc.size(), w.size()));
  PETREL_RETURN_IF_ERROR(CheckSize("g", g.size(), w.size()));
  if (device.is_cuda()) {
#ifdef PETREL_HAVE_CUDA
    return internal::AdagradRowUpdateCuda(device, params, w, acc, g);
#else
    return NoCuda();
#endif
  }
  internal::AdagradRowUpdateCpu(params, w, acc, g);
  return absl::OkStatus();
}

absl::Status AdamRowUpdate(const Device& device, const AdamRowParams& params,
                           size_t dim, absl::Span<float> w, absl::Span<float> m,
                           absl::Span<float> v, absl::Span<float> steps,
                           absl::Span<const float> g) {
  size_t rows_x_dim = 0;
  if (__builtin_mul_overflow(steps.size(), dim, &rows_x_dim) ||
      rows_x_dim != w.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("steps has ", steps.size(), " rows of dim ", dim,
                     ", but w has ", w.size(), " entries"));
  }
  PETREL_RETURN_IF_ERROR(
      CheckState(w.size(), "m", m.size(), "v", v.size(), g.size()));
  if (device.is_cuda()) {
#ifdef PETREL_HAVE_CUDA
    return internal::AdamRowUpdateCuda(device, params, dim, w, m, v, steps, g);
#else
    return NoCuda();
#endif
  }
  internal::AdamRowUpdateCpu(params, dim, w, m, v, steps, g);
  return absl::OkStatus();
}

absl::Status FtrlRowUpdate(const Device& device, const FtrlRowParams& params,
                           absl::Span<float> w, absl::Span<float> z,
                           absl::Span<float> n, absl::Span<const float> g) {
  PETREL_RETURN_IF_ERROR(
      CheckState(w.size(), "z", z.size(), "n", n.size(), g.size()));
  if (device.is_cuda()) {
#ifdef PETREL_HAVE_CUDA
    return internal::FtrlRowUpdateCuda(device, params, w, z, n, g);
#else
    return NoCuda();
#endif
  }
  internal::FtrlRowUpdateCpu(params, w, z, n, g);
  return absl::OkStatus();
}

}  // namespace petrel
