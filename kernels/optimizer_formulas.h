// The one implementation of each optimizer's update of a single value,
// shared by the servers' tables (server/optimizer.h) and the row kernels
// (kernels/optimizer_rows.h, CPU and CUDA), so that every side computes the
// same float operations in the same order. Each function takes one weight,
// its gradient (the batch's MEAN, as the trainers push it: worker/model/model.h
// AverageOverBatch) and its state by reference,
// updates the state and returns the new weight, clipped to
// [weight_min, weight_max] (no bounds by default):
//
//   SGD      w -= lr * g
//   Adagrad  acc += g^2; w -= lr * g / (sqrt(acc) + eps)
//   Adam     per row with step count t (incremented before the row's step):
//            m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
//            w -= lr * (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps)
//   FTRL     FTRL-Proximal (McMahan et al. 2013), per coordinate:
//            sigma = (sqrt(n + g^2) - sqrt(n)) / alpha; z += g - sigma w;
//            n += g^2; w = |z| <= l1 ? 0
//                : -(z - sign(z) l1) / ((beta + sqrt(n)) / alpha + l2)
//            a new row starts with n = 0 and z = -(w0 (beta/alpha + l2) +
//            sign(w0) l1), which that formula maps back to its initial w0;
//            with weight_decay wd, g is first replaced by g + wd * w (L2 on
//            the mean loss, applied at each update of the value)
//
// SGD, Adagrad and Adam take an L2 term `weight_decay` (wd, default 0): each
// update of a value first replaces its gradient by g + wd * w (coupled L2,
// as PyTorch's `weight_decay`), so that the formulas above see that sum.
// It applies when a row is updated (lazily: a sparse row only when a batch
// touches it), on the scale of the batch's mean gradient (docs/training.md,
// "Weight decay").
//
// Header-only and dependency-free (it sits below both kernels/ and
// server/); PETREL_HOST_DEVICE makes the functions callable from CUDA
// kernels. The only device difference: the Adam bias correction 1 - b^t is
// computed in double on the device, where powf's few-ulp error would be
// amplified by the cancellation (1 - 0.999^1 = 0.001).
//
// Thread safety: pure functions on the values passed in.
#ifndef PETREL_KERNELS_OPTIMIZER_FORMULAS_H_
#define PETREL_KERNELS_OPTIMIZER_FORMULAS_H_

#include <cmath>
#include <limits>

#ifdef __CUDACC__
#define PETREL_HOST_DEVICE __host__ __device__
#else
#define PETREL_HOST_DEVICE
#endif

namespace petrel {

// Bounds every update clips its new weight to.
struct WeightBounds {
  float min = -std::numeric_limits<float>::infinity();
  float max = std::numeric_limits<float>::infinity();
};

struct SgdRowParams {
  float learning_rate = 0.01f;
  WeightBounds bounds;
  float weight_decay = 0.0f;
};

struct AdagradRowParams {
  float learning_rate = 0.05f;
  float epsilon = 1e-8f;
  WeightBounds bounds;
  float weight_decay = 0.0f;
};

struct AdamRowParams {
  float learning_rate = 0.001f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float epsilon = 1e-8f;
  WeightBounds bounds;
  float weight_decay = 0.0f;
};

struct FtrlRowParams {
  float alpha = 0.05f;
  float beta = 1.0f;
  float l1 = 1.0f;
  float l2 = 1.0f;
  WeightBounds bounds;
  float weight_decay = 0.0f;
};

PETREL_HOST_DEVICE inline float ClipWeight(const WeightBounds& b, float w) {
  return w < b.min ? b.min : w > b.max ? b.max : w;
}

PETREL_HOST_DEVICE inline float SgdStep(const SgdRowParams& p, float w,
                                        float g) {
  g += p.weight_decay * w;
  return ClipWeight(p.bounds, w - p.learning_rate * g);
}

PETREL_HOST_DEVICE inline float AdagradStep(const AdagradRowParams& p, float w,
                                            float g, float& acc) {
  g += p.weight_decay * w;
  const float a = acc + g * g;
  acc = a;
  return ClipWeight(p.bounds, w - p.learning_rate * g / (sqrtf(a) + p.epsilon));
}

// 1 - beta^t, Adam's bias correction at step t (t >= 1).
PETREL_HOST_DEVICE inline float AdamCorrection(float beta, float t) {
#ifdef __CUDA_ARCH__
  return static_cast<float>(1.0 - pow(double{beta}, double{t}));
#else
  return 1.0f - std::pow(beta, t);
#endif
}

// c1 = AdamCorrection(beta1, t), c2 = AdamCorrection(beta2, t) for the
// row's step count t.
PETREL_HOST_DEVICE inline float AdamStep(const AdamRowParams& p, float c1,
                                         float c2, float w, float g, float& m,
                                         float& v) {
  g += p.weight_decay * w;
  const float mi = p.beta1 * m + (1.0f - p.beta1) * g;
  const float vi = p.beta2 * v + (1.0f - p.beta2) * g * g;
  m = mi;
  v = vi;
  const float step = (mi / c1) / (sqrtf(vi / c2) + p.epsilon);
  return ClipWeight(p.bounds, w - p.learning_rate * step);
}

PETREL_HOST_DEVICE inline float FtrlStep(const FtrlRowParams& p, float w,
                                         float g, float& z, float& n) {
  g += p.weight_decay * w;
  const float n_new = n + g * g;
  const float sigma = (sqrtf(n_new) - sqrtf(n)) / p.alpha;
  const float zi = z + (g - sigma * w);
  z = zi;
  n = n_new;
  if (fabsf(zi) <= p.l1) return 0.0f;
  return ClipWeight(p.bounds, -(zi - copysignf(p.l1, zi)) /
                                  ((p.beta + sqrtf(n_new)) / p.alpha + p.l2));
}

// The z of a new value w (its n starts at 0): without it, the first update
// would pull a randomly initialized row (FM factors) to almost zero.
PETREL_HOST_DEVICE inline float FtrlInitialZ(const FtrlRowParams& p, float w) {
  if (w == 0.0f) return 0.0f;
  return -(w * (p.beta / p.alpha + p.l2) + copysignf(p.l1, w));
}

}  // namespace petrel

#endif  // PETREL_KERNELS_OPTIMIZER_FORMULAS_H_
