#include "tools/datagen/random.h"

#include <cmath>

#include "glog/logging.h"

namespace petrel {
namespace datagen {
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

uint64_t Rng::Next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

double Rng::Uniform() { return (Next() >> 11) * 0x1.0p-53; }

double Rng::Normal() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  const double u1 = 1.0 - Uniform();  // (0, 1]
  const double u2 = Uniform();
  const double r = std::sqrt(-2 * std::log(u1));
  const double theta = 2 * M_PI * u2;
  spare_ = r * std::sin(theta);
  has_spare_ = true;
  return r * std::cos(theta);
}

double HashNormal(uint64_t bits) {
  double sum = 0;
  for (int i = 0; i < 4; ++i) sum += ((bits >> (16 * i)) & 0xffff) + 0.5;
  // Each term is uniform on (0, 65536) with variance 65536^2 / 12.
  return (sum / 65536 - 2) * std::sqrt(3.0);
}

ZipfSampler::ZipfSampler(int64_t n, double exponent)
    : n_(n), exponent_(exponent) {
  CHECK_GE(n, 1);
  CHECK_GT(exponent, 0);
  h_integral_x1_ = HIntegral(1.5) - 1;
  h_integral_n_ = HIntegral(n + 0.5);
  s_ = 2 - HIntegralInverse(HIntegral(2.5) - H(2));
}

double ZipfSampler::H(double x) const {
  return std::exp(-exponent_ * std::log(x));
}

double ZipfSampler::HIntegral(double x) const {
  const double log_x = std::log(x);
  return Helper2((1 - exponent_) * log_x) * log_x;
}

double ZipfSampler::HIntegralInverse(double x) const {
  double t = x * (1 - exponent_);
  if (t < -1) t = -1;  // guards rounding; the inverse is only valid above -1
  return std::exp(Helper1(t) * x);
}

int64_t ZipfSampler::Sample(Rng* rng) const {
  while (true) {
    const double u =
        h_integral_n_ + rng->Uniform() * (h_integral_x1_ - h_integral_n_);
    const double x = HIntegralInverse(u);
    int64_t k = static_cast<int64_t>(x + 0.5);
    if (k < 1) k = 1;
    if (k > n_) k = n_;
    if (k - x <= s_ || u >= HIntegral(k + 0.5) - H(static_cast<double>(k))) {
      return k;
    }
  }
}

}  // namespace datagen
}  // namespace petrel
