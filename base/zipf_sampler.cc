#include "base/zipf_sampler.h"

#include <cmath>

#include "glog/logging.h"

namespace petrel {
namespace {

// log(1 + x) / x, accurate near 0.
double Helper1(double x) {
  if (std::fabs(x) > 1e-8) return std::log1p(x) / x;
  return 1 - x * (0.5 - x * (1.0 / 3 - 0.25 * x));
}

// (exp(x) - 1) / x, accurate near 0.
double Helper2(double x) {
  if (std::fabs(x) > 1e-8) return std::expm1(x) / x;
  return 1 + x * 0.5 * (1 + x / 3 * (1 + 0.25 * x));
}

}  // namespace

ZipfSampler::ZipfSampler(int64_t n, double exponent)
    : n_(n), exponent_(exponent) {
  CHECK_GE(n, 1);
  CHECK_GT(exponent, 0);
  h_integral_x1_ = HIntegral(1.5) - 1;
  h_integral_n_ = HIntegral(static_cast<double>(n) + 0.5);
  s_ = 2 - HIntegralInverse(HIntegral(2.5) - H(2));
}

double ZipfSampler::H(double x) const {
  return std::exp(-exponent_ * std::log(x));
}

// The integral of H from 1 to x, up to a constant.
double ZipfSampler::HIntegral(double x) const {
  const double log_x = std::log(x);
  return Helper2((1 - exponent_) * log_x) * log_x;
}

double ZipfSampler::HIntegralInverse(double x) const {
  double t = x * (1 - exponent_);
  if (t < -1) t = -1;  // guards rounding; the inverse is only valid above -1
  return std::exp(Helper1(t) * x);
}

bool ZipfSampler::TryDraw(double u01, int64_t* k) const {
  // Uniform over (h_integral_x1_, h_integral_n_].
  const double u = h_integral_n_ + u01 * (h_integral_x1_ - h_integral_n_);
  const double x = HIntegralInverse(u);
  int64_t draw = static_cast<int64_t>(x + 0.5);
  if (draw < 1) draw = 1;
  if (draw > n_) draw = n_;
  const double kd = static_cast<double>(draw);
  if (kd - x <= s_ || u >= HIntegral(kd + 0.5) - H(kd)) {
    *k = draw;
    return true;
  }
  return false;
}

}  // namespace petrel
