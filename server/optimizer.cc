#include "server/optimizer.h"

#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace petrel {
namespace {

class Sgd : public Optimizer {
 public:
  using Optimizer::Optimizer;
  int StateFloats(int) const override { return 0; }
  void InitState(const float*, float*, int) const override {}
  void Update(float* w, float*, const float* g, int dim) const override {
    const float lr = config_.learning_rate;
    for (int i = 0; i < dim; ++i) w[i] = Clip(w[i] - lr * g[i]);
  }
};

class Adagrad : public Optimizer {
 public:
  using Optimizer::Optimizer;
  int StateFloats(int dim) const override { return dim; }
  void InitState(const float*, float* n, int dim) const override {
    for (int i = 0; i < dim; ++i) n[i] = config_.initial_accumulator;
  }
  void Update(float* w, float* n, const float* g, int dim) const override {
    const float lr = config_.learning_rate;
    for (int i = 0; i < dim; ++i) {
      n[i] += g[i] * g[i];
      w[i] = Clip(w[i] - lr * g[i] / (std::sqrt(n[i]) + config_.epsilon));
    }
  }
};

// State: m[dim], v[dim], then the row's step count.
class Adam : public Optimizer {
 public:
  using Optimizer::Optimizer;
  int StateFloats(int dim) const override { return 2 * dim + 1; }
  void InitState(const float*, float* s, int dim) const override {
    std::memset(s, 0, sizeof(float) * StateFloats(dim));
  }
  void Update(float* w, float* s, const float* g, int dim) const override {
    float* m = s;
    float* v = s + dim;
    float& t = s[2 * dim];
    t += 1.0f;
    const float b1 = config_.beta1, b2 = config_.beta2;
    const float c1 = 1.0f - std::pow(b1, t), c2 = 1.0f - std::pow(b2, t);
    for (int i = 0; i < dim; ++i) {
      m[i] = b1 * m[i] + (1.0f - b1) * g[i];
      v[i] = b2 * v[i] + (1.0f - b2) * g[i] * g[i];
      float step = (m[i] / c1) / (std::sqrt(v[i] / c2) + config_.epsilon);
      w[i] = Clip(w[i] - config_.learning_rate * step);
    }
  }
};

// State: z[dim], n[dim].
class Ftrl : public Optimizer {
 public:
  using Optimizer::Optimizer;
  int StateFloats(int dim) const override { return 2 * dim; }
  // n = 0, and z chosen so that the closed form below gives back the initial
  // weights: without it, the first update would pull a randomly initialized
  // row (FM factors) to almost zero.
  void InitState(const float* w, float* s, int dim) const override {
    std::memset(s, 0, sizeof(float) * 2 * dim);
    const float c = config_.ftrl_beta / config_.ftrl_alpha + config_.ftrl_l2;
    for (int i = 0; i < dim; ++i) {
      if (w[i] != 0.0f)
        s[i] = -(w[i] * c + std::copysign(config_.ftrl_l1, w[i]));
    }
  }
  void Update(float* w, float* s, const float* g, int dim) const override {
    float* z = s;
    float* n = s + dim;
    const float alpha = config_.ftrl_alpha, beta = config_.ftrl_beta;
    const float l1 = config_.ftrl_l1, l2 = config_.ftrl_l2;
    for (int i = 0; i < dim; ++i) {
      float n_new = n[i] + g[i] * g[i];
      float sigma = (std::sqrt(n_new) - std::sqrt(n[i])) / alpha;
      z[i] += g[i] - sigma * w[i];
      n[i] = n_new;
      float zi = z[i];
      w[i] = std::fabs(zi) <= l1
                 ? 0.0f
                 : Clip(-(zi - std::copysign(l1, zi)) /
                        ((beta + std::sqrt(n_new)) / alpha + l2));
    }
  }
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
