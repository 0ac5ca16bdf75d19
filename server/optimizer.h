// Server-side optimizers: how a pushed gradient changes a row. Each row of a
// table holds `dim` weights followed by the optimizer's state, so one slab
// allocation serves both (no heap allocation per key).
//
//   SGD, Adagrad, Adam (lazy: only touched rows step, with a per-row step
//   count) and FTRL-Proximal, with the formulas of
//   kernels/optimizer_formulas.h (the kernels use the same ones).
//
// SGD, Adagrad and Adam add an optional L2 term (weight_decay) to the
// gradient of each row they update.
//
// Weights are clipped to [weight_min, weight_max] after each update.
//
// Thread safety: an Optimizer is immutable; Update may run concurrently on
// different rows.
#ifndef PETREL_SERVER_OPTIMIZER_H_
#define PETREL_SERVER_OPTIMIZER_H_

#include <limits>
#include <memory>

#include "absl/status/statusor.h"

namespace petrel {

enum class OptimizerKind { kSgd, kAdagrad, kAdam, kFtrl };

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::kSgd;
  float learning_rate = 0.01f;       // SGD, Adagrad, Adam; > 0
  float epsilon = 1e-8f;             // Adagrad, Adam; >= 0
  float initial_accumulator = 0.0f;  // Adagrad; >= 0
  float beta1 = 0.9f;                // Adam; in [0, 1)
  float beta2 = 0.999f;              // Adam; in [0, 1)
  float ftrl_alpha = 0.05f;          // FTRL; > 0
  float ftrl_beta = 1.0f;            // FTRL; >= 0
  float ftrl_l1 = 1.0f;              // FTRL; >= 0
  float ftrl_l2 = 1.0f;              // FTRL; >= 0
  float ftrl_weight_decay = 0.0f;    // FTRL; >= 0: g + decay * w
  // SGD, Adagrad, Adam: the gradient of an updated row becomes
  // g + weight_decay * w (kernels/optimizer_formulas.h); >= 0. FTRL has
  // ftrl_weight_decay instead and refuses a non-zero weight_decay.
  float weight_decay = 0.0f;
  float weight_min = -std::numeric_limits<float>::infinity();
  float weight_max = std::numeric_limits<float>::infinity();
};

class Optimizer {
 public:
  // InvalidArgument naming the field when a value is out of range.
  static absl::StatusOr<std::unique_ptr<Optimizer>> Create(
      const OptimizerConfig& config);
  virtual ~Optimizer() = default;

  // Floats of state per row of `dim` weights.
  virtual int StateFloats(int dim) const = 0;
  // Sets the state of a new row whose weights are `w`.
  virtual void InitState(const float* w, float* state, int dim) const = 0;
  // Applies gradient `g` to weights `w` and their `state`.
  virtual void Update(float* w, float* state, const float* g,
                      int dim) const = 0;

 protected:
  explicit Optimizer(const OptimizerConfig& config) : config_(config) {}
  const OptimizerConfig config_;
};

}  // namespace petrel

#endif  // PETREL_SERVER_OPTIMIZER_H_
