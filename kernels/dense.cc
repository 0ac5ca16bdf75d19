// Dispatchers of kernels/dense.h: every size check happens here, so the
// CUDA entry points (kernels/internal/cuda_ops.h) can assume them. The
// layers are composed from the primitives, so they run on any device.
#include "kernels/dense.h"

#include "absl/strings/str_cat.h"

#include "base/status_macros.h"
#include "kernels/internal/cuda_ops.h"
#include "kernels/internal/dense_cpu.h"
#include "kernels/sparse_batch.h"

namespace petrel {
namespace {

#ifdef PETREL_HAVE_CUDA
#define PETREL_DENSE_DISPATCH(device, cuda_call, cpu_call) \
  do {                                                     \
    if ((device).is_cuda()) return internal::cuda_call;    \
    internal::cpu_call;                                    \
    return absl::OkStatus();                               \
  } while (0)
#else
#define PETREL_DENSE_DISPATCH(device, cuda_call, cpu_call)           \
  do {                                                               \
    if ((device).is_cuda()) {                                        \
      return absl::FailedPreconditionError("no CUDA in this build"); \
    }                                                                \
    internal::cpu_call;                                              \
    return absl::OkStatus();                                         \
  } while (0)
#endif

// rows x cols, or InvalidArgument when the product overflows.
absl::Status Product(const char* what, size_t rows, size_t cols, size_t* out) {
  if (!__builtin_mul_overflow(rows, cols, out)) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(what, " is ", rows, " x ", cols, ", which overflows"));
}

// InvalidArgument unless `span_size == rows * cols`.
absl::Status CheckMatrix(const char* what, size_t span_size, size_t rows,
                         size_t cols) {
  size_t want = 0;
  PETREL_RETURN_IF_ERROR(Product(what, rows, cols, &want));
  if (span_size == want) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      what, " has ", span_size, " entries, expected ", rows, " x ", cols));
}

}  // namespace

absl::Status Gemm(const Device& device, bool trans_a, bool trans_b, size_t m,
                  size_t n, size_t k, float alpha, absl::Span<const float> a,
                  absl::Span<const float> b, float beta, absl::Span<float> c) {
  PETREL_RETURN_IF_ERROR(CheckMatrix("a", a.size(), m, k));
  PETREL_RETURN_IF_ERROR(CheckMatrix("b", b.size(), k, n));
  PETREL_RETURN_IF_ERROR(CheckMatrix("c", c.size(), m, n));
  PETREL_DENSE_DISPATCH(
      device, GemmCuda(device, trans_a, trans_b, m, n, k, alpha, a, b, beta, c),
      GemmCpu(trans_a, trans_b, m, n, k, alpha, a, b, beta, c));
}

absl::Status AddBias(const Device& device, size_t rows, size_t cols,
                     absl::Span<const float> bias, absl::Span<float> y) {
  PETREL_RETURN_IF_ERROR(CheckSize("bias", bias.size(), cols));
  PETREL_RETURN_IF_ERROR(CheckMatrix("y", y.size(), rows, cols));
  PETREL_DENSE_DISPATCH(device, AddBiasCuda(device, rows, cols, bias, y),
                        AddBiasCpu(rows, cols, bias, y));
}

absl::Status BiasGrad(const Device& device, size_t rows, size_t cols,
                      absl::Span<const float> dy, absl::Span<float> dbias) {
  PETREL_RETURN_IF_ERROR(CheckMatrix("dy", dy.size(), rows, cols));
  PETREL_RETURN_IF_ERROR(CheckSize("dbias", dbias.size(), cols));
  PETREL_DENSE_DISPATCH(device, BiasGradCuda(device, rows, cols, dy, dbias),
                        BiasGradCpu(rows, cols, dy, dbias));
}

absl::Status Relu(const Device& device, absl::Span<float> y) {
  PETREL_DENSE_DISPATCH(device, ReluCuda(device, y), ReluCpu(y));
}

absl::Status ReluBackward(const Device& device, absl::Span<const float> y,
                          absl::Span<float> dy) {
  PETREL_RETURN_IF_ERROR(CheckSize("dy", dy.size(), y.size()));
  PETREL_DENSE_DISPATCH(device, ReluBackwardCuda(device, y, dy),
                        ReluBackwardCpu(y, dy));
}

absl::Status DenseForward(const Device& device, const DenseShape& shape,
                          absl::Span<const float> x, absl::Span<const float> w,
                          absl::Span<const float> b, absl::Span<float> y) {
  // Gemm checks x, w and y against the shape.
  PETREL_RETURN_IF_ERROR(CheckSize("b", b.size(), shape.out));
  PETREL_RETURN_IF_ERROR(Gemm(device, false, false, shape.batch, shape.out,
                              shape.in, 1.0f, x, w, 0.0f, y));
  PETREL_RETURN_IF_ERROR(AddBias(device, shape.batch, shape.out, b, y));
  return shape.relu ? Relu(device, y) : absl::OkStatus();
}

absl::Status DenseBackward(const Device& device, const DenseShape& shape,
                           absl::Span<const float> x, absl::Span<const float> w,
                           absl::Span<const float> y, absl::Span<float> dy,
                           absl::Span<float> dx, absl::Span<float> dw,
                           absl::Span<float> db) {
  // Check everything before writing anything.
  PETREL_RETURN_IF_ERROR(CheckMatrix("x", x.size(), shape.batch, shape.in));
  PETREL_RETURN_IF_ERROR(CheckMatrix("w", w.size(), shape.in, shape.out));
  PETREL_RETURN_IF_ERROR(CheckMatrix("y", y.size(), shape.batch, shape.out));
  PETREL_RETURN_IF_ERROR(CheckMatrix("dy", dy.size(), shape.batch, shape.out));
  PETREL_RETURN_IF_ERROR(CheckMatrix("dw", dw.size(), shape.in, shape.out));
  PETREL_RETURN_IF_ERROR(CheckSize("db", db.size(), shape.out));
  if (!dx.empty()) {
    PETREL_RETURN_IF_ERROR(CheckMatrix("dx", dx.size(), shape.batch, shape.in));
  }
  if (shape.relu) PETREL_RETURN_IF_ERROR(ReluBackward(device, y, dy));
  PETREL_RETURN_IF_ERROR(BiasGrad(device, shape.batch, shape.out, dy, db));
  // dW = x^T dy: [in x batch] [batch x out].
  PETREL_RETURN_IF_ERROR(Gemm(device, true, false, shape.in, shape.out,
                              shape.batch, 1.0f, x, dy, 0.0f, dw));
  if (dx.empty()) return absl::OkStatus();
  // dx = dy W^T: [batch x out] [out x in].
  return Gemm(device, false, true, shape.batch, shape.in, shape.out, 1.0f, dy,
              w, 0.0f, dx);
}

}  // namespace petrel
