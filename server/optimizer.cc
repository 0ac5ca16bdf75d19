#include "server/optimizer.h"

#include <cstring>

#include "absl/strings/str_cat.h"

#include "kernels/optimizer_formulas.h"

namespace petrel {
namespace {

WeightBounds Bounds(const OptimizerConfig& c) {
  return WeightBounds{c.weight_min, c.weight_max};
}

// Each class keeps its formula's parameters (kernels/optimizer_formulas.h)
// and copies them to a local before its loop, so that the compiler keeps
// them in registers (a member could alias the rows written).
class Sgd : public Optimizer {
 public:
  explicit Sgd(const OptimizerConfig& c)
      : Optimizer(c), params_{c.learning_rate, Bounds(c), c.weight_decay} {}
  int StateFloats(int) const override { return 0; }
  void InitState(const float*, float*, int) const override {}
  void Update(float* w, float*, const float* g, int dim) const override {
    const SgdRowParams p = params_;
    for (int i = 0; i < dim; ++i) w[i] = SgdStep(p, w[i], g[i]);
  }

 private:
  const SgdRowParams params_;
};

class Adagrad : public Optimizer {
 public:
  explicit Adagrad(const OptimizerConfig& c)
      : Optimizer(c),
        params_{c.learning_rate, c.epsilon, Bounds(c), c.weight_decay} {}
  int StateFloats(int dim) const override { return dim; }
  void InitState(const float*, float* n, int dim) const override {
    for (int i = 0; i < dim; ++i) n[i] = config_.initial_accumulator;
  }
  void Update(float* w, float* n, const float* g, int dim) const override {
    const AdagradRowParams p = params_;
    for (int i = 0; i < dim; ++i) w[i] = AdagradStep(p, w[i], g[i], n[i]);
  }

 private:
  const AdagradRowParams params_;
};

// State: m[dim], v[dim], then the row's step count.
class Adam : public Optimizer {
 public:
  explicit Adam(const OptimizerConfig& c)
      : Optimizer(c), params_{c.learning_rate, c.beta1,   c.beta2,
                              c.epsilon,       Bounds(c), c.weight_decay} {}
  int StateFloats(int dim) const override { return 2 * dim + 1; }
  void InitState(const float*, float* s, int dim) const override {
    std::memset(s, 0, sizeof(float) * StateFloats(dim));
  }
  void Update(float* w, float* s, const float* g, int dim) const override {
    const AdamRowParams p = params_;
    float* m = s;
    float* v = s + dim;
    float& t = s[2 * dim];
    t += 1.0f;
    const float c1 = AdamCorrection(p.beta1, t);
    const float c2 = AdamCorrection(p.beta2, t);
    for (int i = 0; i < dim; ++i) {
      w[i] = AdamStep(p, c1, c2, w[i], g[i], m[i], v[i]);
    }
  }

 private:
  const AdamRowParams params_;
};

// State: z[dim], n[dim].
class Ftrl : public Optimizer {
 public:
  explicit Ftrl(const OptimizerConfig& c)
      : Optimizer(c), params_{c.ftrl_alpha, c.ftrl_beta, c.ftrl_l1,
                              c.ftrl_l2,    Bounds(c),   c.ftrl_weight_decay} {}
  int StateFloats(int dim) const override { return 2 * dim; }
  void InitState(const float* w, float* s, int dim) const override {
    const FtrlRowParams p = params_;
    for (int i = 0; i < dim; ++i) {
      s[i] = FtrlInitialZ(p, w[i]);
      s[dim + i] = 0.0f;
    }
  }
  void Update(float* w, float* s, const float* g, int dim) const override {
    const FtrlRowParams p = params_;
    float* z = s;
    float* n = s + dim;
    for (int i = 0; i < dim; ++i) w[i] = FtrlStep(p, w[i], g[i], z[i], n[i]);
  }

 private:
  const FtrlRowParams params_;
};

absl::Status Check(bool ok, const char* field, float value) {
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("optimizer ", field, " = ", value, " is out of range"));
}

absl::Status Validate(const OptimizerConfig& c) {
  for (absl::Status s :
       {Check(c.learning_rate > 0, "learning_rate", c.learning_rate),
        Check(c.epsilon >= 0, "epsilon", c.epsilon),
        Check(c.initial_accumulator >= 0, "initial_accumulator",
              c.initial_accumulator),
        Check(c.beta1 >= 0 && c.beta1 < 1, "beta1", c.beta1),
        Check(c.beta2 >= 0 && c.beta2 < 1, "beta2", c.beta2),
        Check(c.ftrl_alpha > 0, "ftrl_alpha", c.ftrl_alpha),
        Check(c.ftrl_beta >= 0, "ftrl_beta", c.ftrl_beta),
        Check(c.ftrl_l1 >= 0, "ftrl_l1", c.ftrl_l1),
        Check(c.ftrl_l2 >= 0, "ftrl_l2", c.ftrl_l2),
        Check(c.ftrl_weight_decay >= 0, "ftrl_weight_decay",
              c.ftrl_weight_decay),
        Check(c.weight_decay >= 0, "weight_decay", c.weight_decay),
        Check(c.weight_decay == 0 || c.kind != OptimizerKind::kFtrl,
              "weight_decay (FTRL has ftrl_weight_decay)", c.weight_decay),
        Check(c.weight_min <= c.weight_max, "weight_min", c.weight_min)}) {
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Optimizer>> Optimizer::Create(
    const OptimizerConfig& config) {
  absl::Status s = Validate(config);
  if (!s.ok()) return s;
  switch (config.kind) {
    case OptimizerKind::kSgd:
      return std::unique_ptr<Optimizer>(new Sgd(config));
    case OptimizerKind::kAdagrad:
      return std::unique_ptr<Optimizer>(new Adagrad(config));
    case OptimizerKind::kAdam:
      return std::unique_ptr<Optimizer>(new Adam(config));
    case OptimizerKind::kFtrl:
      return std::unique_ptr<Optimizer>(new Ftrl(config));
  }
  return absl::InvalidArgumentError("unknown optimizer kind");
}

}  // namespace petrel
