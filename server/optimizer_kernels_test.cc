// The servers' optimizers (server/optimizer.h) and the CPU row kernels
// (kernels/optimizer_rows.h) call the same formulas, so they must give the
// same bits for the same row and gradients.
#include <cstring>
#include <random>
#include <vector>

#include "gtest/gtest.h"

#include "kernels/device.h"
#include "kernels/optimizer_rows.h"
#include "server/optimizer.h"

namespace petrel {
namespace {

constexpr int kDim = 16;
constexpr int kSteps = 3;

std::vector<float> Random(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.5f);
  std::vector<float> out(n);
  for (float& x : out) x = normal(rng);
  return out;
}

bool SameBits(absl::Span<const float> a, absl::Span<const float> b) {
  return a.size() == b.size() &&
         std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Runs kSteps server updates on a row starting at w0; returns w then the
// state.
std::vector<float> ServerRow(const OptimizerConfig& c,
                             const std::vector<float>& w0) {
  auto opt = Optimizer::Create(c);
  EXPECT_TRUE(opt.ok()) << opt.status();
  std::vector<float> row = w0;
  row.resize(kDim + (*opt)->StateFloats(kDim));
  (*opt)->InitState(row.data(), row.data() + kDim, kDim);
  for (int step = 0; step < kSteps; ++step) {
    const std::vector<float> g = Random(kDim, 100 + step);
    (*opt)->Update(row.data(), row.data() + kDim, g.data(), kDim);
  }
  return row;
}

TEST(OptimizerKernelsTest, AdagradGivesTheKernelsBits) {
  OptimizerConfig c;
  c.kind = OptimizerKind::kAdagrad;
  c.learning_rate = 0.1f;
  c.weight_decay = 0.01f;
  const std::vector<float> w0 = Random(kDim, 1);
  const std::vector<float> server = ServerRow(c, w0);
  std::vector<float> w = w0, acc(kDim, 0.0f);
  AdagradRowParams p;
  p.learning_rate = c.learning_rate;
  p.epsilon = c.epsilon;
  p.weight_decay = c.weight_decay;
  for (int step = 0; step < kSteps; ++step) {
    ASSERT_TRUE(AdagradRowUpdate(Device::Cpu(), p, absl::MakeSpan(w),
                                 absl::MakeSpan(acc), Random(kDim, 100 + step))
                    .ok());
  }
  w.insert(w.end(), acc.begin(), acc.end());
  EXPECT_TRUE(SameBits(server, w));
}

TEST(OptimizerKernelsTest, AdamGivesTheKernelsBits) {
  OptimizerConfig c;
  c.kind = OptimizerKind::kAdam;
  c.weight_decay = 0.01f;
  const std::vector<float> w0 = Random(kDim, 2);
  const std::vector<float> server = ServerRow(c, w0);
  std::vector<float> w = w0, m(kDim, 0.0f), v(kDim, 0.0f), t(1, 0.0f);
  AdamRowParams p;
  p.learning_rate = c.learning_rate;
  p.beta1 = c.beta1;
  p.beta2 = c.beta2;
  p.epsilon = c.epsilon;
  p.weight_decay = c.weight_decay;
  for (int step = 0; step < kSteps; ++step) {
    ASSERT_TRUE(AdamRowUpdate(Device::Cpu(), p, kDim, absl::MakeSpan(w),
                              absl::MakeSpan(m), absl::MakeSpan(v),
                              absl::MakeSpan(t), Random(kDim, 100 + step))
                    .ok());
  }
  w.insert(w.end(), m.begin(), m.end());
  w.insert(w.end(), v.begin(), v.end());
  w.push_back(t[0]);
  EXPECT_TRUE(SameBits(server, w));
}

TEST(OptimizerKernelsTest, FtrlGivesTheKernelsBits) {
  OptimizerConfig c;
  c.kind = OptimizerKind::kFtrl;
  c.ftrl_l1 = 0.01f;  // most weights stay non-zero
  const std::vector<float> w0 = Random(kDim, 3);
  const std::vector<float> server = ServerRow(c, w0);
  FtrlRowParams p;
  p.alpha = c.ftrl_alpha;
  p.beta = c.ftrl_beta;
  p.l1 = c.ftrl_l1;
  p.l2 = c.ftrl_l2;
  std::vector<float> w = w0, z(kDim), n(kDim, 0.0f);
  for (int i = 0; i < kDim; ++i) z[i] = FtrlInitialZ(p, w0[i]);
  for (int step = 0; step < kSteps; ++step) {
    ASSERT_TRUE(FtrlRowUpdate(Device::Cpu(), p, absl::MakeSpan(w),
                              absl::MakeSpan(z), absl::MakeSpan(n),
                              Random(kDim, 100 + step))
                    .ok());
  }
  w.insert(w.end(), z.begin(), z.end());
  w.insert(w.end(), n.begin(), n.end());
  EXPECT_TRUE(SameBits(server, w));
}

}  // namespace
}  // namespace petrel
