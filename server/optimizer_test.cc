#include "server/optimizer.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace petrel {
namespace {

struct Row {
  std::vector<float> w;
  std::vector<float> state;
};

Row MakeRow(const Optimizer& opt, std::vector<float> w) {
  Row r{w, std::vector<float>(opt.StateFloats(static_cast<int>(w.size())))};
  opt.InitState(r.w.data(), r.state.data(), static_cast<int>(w.size()));
  return r;
}

std::unique_ptr<Optimizer> Make(OptimizerConfig c) {
  auto opt = Optimizer::Create(c);
  EXPECT_TRUE(opt.ok()) << opt.status();
  return *std::move(opt);
}

// The FTRL settings the hand-computed FTRL steps below assume.
OptimizerConfig FtrlConfig() {
  OptimizerConfig c;
  c.kind = OptimizerKind::kFtrl;
  c.ftrl_alpha = 0.1f;
  c.ftrl_beta = 1.0f;
  c.ftrl_l1 = 0.5f;
  c.ftrl_l2 = 0.1f;
  return c;
}

TEST(OptimizerTest, SgdStepsAgainstTheGradient) {
  OptimizerConfig c;
  c.learning_rate = 0.5f;
  auto opt = Make(c);
  Row r = MakeRow(*opt, {1.0f, -2.0f});
  float g[] = {0.2f, -0.4f};
  opt->Update(r.w.data(), r.state.data(), g, 2);
  opt->Update(r.w.data(), r.state.data(), g, 2);
  EXPECT_FLOAT_EQ(r.w[0], 1.0f - 2 * 0.1f);
  EXPECT_FLOAT_EQ(r.w[1], -2.0f + 2 * 0.2f);
}

TEST(OptimizerTest, AdagradMatchesHandComputedSteps) {
  OptimizerConfig c;
  c.kind = OptimizerKind::kAdagrad;
  c.learning_rate = 0.1f;
  c.epsilon = 0.0f;
  c.initial_accumulator = 1.0f;
  auto opt = Make(c);
  Row r = MakeRow(*opt, {0.0f});
  float g1[] = {1.0f}, g2[] = {2.0f};
  opt->Update(r.w.data(), r.state.data(), g1, 1);  // n=2: w=-0.1/sqrt(2)
  EXPECT_NEAR(r.w[0], -0.1 / std::sqrt(2.0), 1e-6);
  opt->Update(r.w.data(), r.state.data(), g2, 1);  // n=6
  EXPECT_NEAR(r.w[0], -0.1 / std::sqrt(2.0) - 0.2 / std::sqrt(6.0), 1e-6);
  EXPECT_FLOAT_EQ(r.state[0], 6.0f);
}

TEST(OptimizerTest, AdamMatchesHandComputedStepsWithBiasCorrection) {
  OptimizerConfig c;
  c.kind = OptimizerKind::kAdam;
  c.learning_rate = 0.01f;
  c.epsilon = 0.0f;
  auto opt = Make(c);
  Row r = MakeRow(*opt, {0.5f});
  float g1[] = {0.3f}, g2[] = {-0.1f};
  // Step 1: m_hat = g, v_hat = g^2, so the step is lr * sign(g).
  opt->Update(r.w.data(), r.state.data(), g1, 1);
  EXPECT_NEAR(r.w[0], 0.49, 1e-6);
  // Step 2 by hand in double.
  double m = 0.9 * 0.03 + 0.1 * -0.1, v = 0.999 * 0.00009 + 0.001 * 0.01;
  double step = (m / (1 - 0.81)) / std::sqrt(v / (1 - 0.999 * 0.999));
  opt->Update(r.w.data(), r.state.data(), g2, 1);
  EXPECT_NEAR(r.w[0], 0.49 - 0.01 * step, 1e-6);
  EXPECT_FLOAT_EQ(r.state[2], 2.0f);  // the row's own step count
}

TEST(OptimizerTest, FtrlMatchesHandComputedStepsAndIsSparse) {
  auto opt = Make(FtrlConfig());
  Row r = MakeRow(*opt, {0.0f});
  float small[] = {0.3f};
  opt->Update(r.w.data(), r.state.data(), small, 1);
  EXPECT_EQ(r.w[0], 0.0f);  // |z| = 0.3 <= l1
  float big[] = {1.0f};
  opt->Update(r.w.data(), r.state.data(), big, 1);
  // n = 0.09 + 1 = 1.09; z = 0.3 + 1 - (sqrt(1.09) - 0.3) / 0.1 * 0.
  double n = 1.09, z = 1.3;
  double want = -(z - 0.5) / ((1.0 + std::sqrt(n)) / 0.1 + 0.1);
  EXPECT_NEAR(r.w[0], want, 1e-6);
  float third[] = {-0.5f};
  double w2 = want;
  double n3 = n + 0.25;
  double sigma = (std::sqrt(n3) - std::sqrt(n)) / 0.1;
  double z3 = z - 0.5 - sigma * w2;
  double want3 = std::fabs(z3) <= 0.5 ? 0.0
                                      : -(z3 - std::copysign(0.5, z3)) /
                                            ((1.0 + std::sqrt(n3)) / 0.1 + 0.1);
  opt->Update(r.w.data(), r.state.data(), third, 1);
  EXPECT_NEAR(r.w[0], want3, 1e-6);
}

TEST(OptimizerTest, FtrlKeepsInitialWeightsUntilGradientsMoveThem) {
  auto opt = Make(FtrlConfig());
  Row r = MakeRow(*opt, {0.02f, -0.03f, 0.0f});
  float zero[] = {0.0f, 0.0f, 0.0f};
  opt->Update(r.w.data(), r.state.data(), zero, 3);
  EXPECT_NEAR(r.w[0], 0.02f, 1e-6);
  EXPECT_NEAR(r.w[1], -0.03f, 1e-6);
  EXPECT_EQ(r.w[2], 0.0f);
  // A small gradient moves w0 a little, by the closed form from z and n.
  float g[] = {0.01f, 0.0f, 0.0f};
  opt->Update(r.w.data(), r.state.data(), g, 3);
  double z = -(0.02 * (1.0 / 0.1 + 0.1) + 0.5);
  double n = 0.0001;
  z += 0.01 - std::sqrt(n) / 0.1 * 0.02;
  double want = -(z + 0.5) / ((1.0 + std::sqrt(n)) / 0.1 + 0.1);
  EXPECT_NEAR(r.w[0], want, 1e-6);
  EXPECT_GT(r.w[0], 0.015f);
}

// The mean loss 0.5 (w - 1)^2, whose gradient is w - 1, stepped many times:
// with ftrl_weight_decay d FTRL settles at the minimum of that loss plus
// d/2 w^2, 1 / (1 + d), however many steps it takes; ftrl_l2 weighs once
// against the sum of all the steps' gradients, so its pull fades and the
// weight ends near 1.
TEST(OptimizerTest, FtrlWeightDecayIsAnL2OnTheMeanLossThatDoesNotFade) {
  OptimizerConfig c;
  c.kind = OptimizerKind::kFtrl;
  c.ftrl_alpha = 0.5f;
  c.ftrl_beta = 0.001f;
  c.ftrl_l1 = 0.0f;
  c.ftrl_l2 = 0.0f;
  c.ftrl_weight_decay = 0.25f;
  auto decay = Make(c);
  c.ftrl_weight_decay = 0.0f;
  c.ftrl_l2 = 0.25f;
  auto l2 = Make(c);
  Row a = MakeRow(*decay, {0.0f});
  Row b = MakeRow(*l2, {0.0f});
  for (int step = 0; step < 20000; ++step) {
    float ga[] = {a.w[0] - 1.0f};
    decay->Update(a.w.data(), a.state.data(), ga, 1);
    float gb[] = {b.w[0] - 1.0f};
    l2->Update(b.w.data(), b.state.data(), gb, 1);
  }
  EXPECT_NEAR(a.w[0], 1.0 / 1.25, 1e-3);
  EXPECT_GT(b.w[0], 0.99f);
}

TEST(OptimizerTest, FtrlWeightDecayAddsToTheGradient) {
  // One step from w = 0.02 (n = 0): the gradient seen is 0.01 + d * 0.02.
  OptimizerConfig c = FtrlConfig();
  c.ftrl_weight_decay = 0.5f;
  auto opt = Make(c);
  Row r = MakeRow(*opt, {0.02f});
  float g[] = {0.01f};
  opt->Update(r.w.data(), r.state.data(), g, 1);
  const double gd = 0.01 + 0.5 * 0.02;
  double z = -(0.02 * (1.0 / 0.1 + 0.1) + 0.5);
  z += gd - std::sqrt(gd * gd) / 0.1 * 0.02;
  double want = -(z + 0.5) / ((1.0 + std::sqrt(gd * gd)) / 0.1 + 0.1);
  EXPECT_NEAR(r.w[0], want, 1e-6);
}

// weight_decay wd replaces each gradient by g + wd * w before the step.
TEST(OptimizerTest, SgdWeightDecayAddsTheL2Gradient) {
  OptimizerConfig c;
  c.learning_rate = 0.5f;
  c.weight_decay = 0.25f;
  auto opt = Make(c);
  Row r = MakeRow(*opt, {1.0f, -2.0f});
  float g[] = {0.5f, 0.0f};
  opt->Update(r.w.data(), r.state.data(), g, 2);
  // g' = 0.5 + 0.25 * 1 = 0.75: w = 1 - 0.375; g' = 0 - 0.5: w = -2 + 0.25.
  EXPECT_EQ(r.w[0], 0.625f);
  EXPECT_EQ(r.w[1], -1.75f);
}

TEST(OptimizerTest, AdagradWeightDecayEntersTheAccumulator) {
  OptimizerConfig c;
  c.kind = OptimizerKind::kAdagrad;
  c.learning_rate = 0.1f;
  c.epsilon = 0.0f;
  c.initial_accumulator = 1.0f;
  c.weight_decay = 0.5f;
  auto opt = Make(c);
  Row r = MakeRow(*opt, {2.0f});
  float g[] = {0.0f};
  // g' = 0 + 0.5 * 2 = 1: acc = 2, w = 2 - 0.1 / sqrt(2).
  opt->Update(r.w.data(), r.state.data(), g, 1);
  EXPECT_FLOAT_EQ(r.state[0], 2.0f);
  const double w1 = 2.0 - 0.1 / std::sqrt(2.0);
  EXPECT_NEAR(r.w[0], w1, 1e-6);
  // g' = 1 + 0.5 * w1: acc = 2 + g'^2.
  float g2[] = {1.0f};
  opt->Update(r.w.data(), r.state.data(), g2, 1);
  const double g2d = 1.0 + 0.5 * w1, acc = 2.0 + g2d * g2d;
  EXPECT_NEAR(r.state[0], acc, 1e-5);
  EXPECT_NEAR(r.w[0], w1 - 0.1 * g2d / std::sqrt(acc), 1e-6);
}

TEST(OptimizerTest, AdamWeightDecayIsCoupledL2) {
  OptimizerConfig c;
  c.kind = OptimizerKind::kAdam;
  c.learning_rate = 0.01f;
  c.epsilon = 0.0f;
  c.weight_decay = 0.1f;
  auto opt = Make(c);
  Row r = MakeRow(*opt, {0.5f, -0.5f});
  // g' = g + 0.1 w: {0.3 + 0.05, -0.05 - 0.05}; the first step is
  // lr * sign(g'), and m, v hold g' (not g).
  float g[] = {0.3f, -0.05f};
  opt->Update(r.w.data(), r.state.data(), g, 2);
  EXPECT_NEAR(r.w[0], 0.49, 1e-6);
  EXPECT_NEAR(r.w[1], -0.49, 1e-6);
  EXPECT_NEAR(r.state[0], 0.1 * 0.35, 1e-7);  // m = (1 - b1) g'
  EXPECT_NEAR(r.state[1], 0.1 * -0.1, 1e-7);
  EXPECT_NEAR(r.state[2], 0.001 * 0.35 * 0.35, 1e-8);  // v = (1 - b2) g'^2
}

TEST(OptimizerTest, WeightDecayIsRefusedForFtrlAndWhenNegative) {
  OptimizerConfig c = FtrlConfig();
  c.weight_decay = 0.1f;
  EXPECT_EQ(Optimizer::Create(c).status().code(),
            absl::StatusCode::kInvalidArgument);
  c = OptimizerConfig();
  c.weight_decay = -0.1f;
  EXPECT_EQ(Optimizer::Create(c).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(OptimizerTest, WeightBoundsClip) {
  OptimizerConfig c;
  c.learning_rate = 10.0f;
  c.weight_min = -1.0f;
  c.weight_max = 1.0f;
  auto opt = Make(c);
  Row r = MakeRow(*opt, {0.0f, 0.0f});
  float g[] = {1.0f, -1.0f};
  opt->Update(r.w.data(), r.state.data(), g, 2);
  EXPECT_EQ(r.w[0], -1.0f);
  EXPECT_EQ(r.w[1], 1.0f);
}

TEST(OptimizerTest, RejectsOutOfRangeConfig) {
  OptimizerConfig c;
  c.learning_rate = 0.0f;
  EXPECT_EQ(Optimizer::Create(c).status().code(),
            absl::StatusCode::kInvalidArgument);
  c = OptimizerConfig();
  c.kind = OptimizerKind::kAdam;
  c.beta1 = 1.0f;
  EXPECT_EQ(Optimizer::Create(c).status().code(),
            absl::StatusCode::kInvalidArgument);
  c = OptimizerConfig();
  c.kind = OptimizerKind::kFtrl;
  c.ftrl_weight_decay = -0.1f;
  EXPECT_EQ(Optimizer::Create(c).status().code(),
            absl::StatusCode::kInvalidArgument);
  c = OptimizerConfig();
  c.weight_min = 1.0f;
  c.weight_max = 0.0f;
  EXPECT_EQ(Optimizer::Create(c).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace petrel
