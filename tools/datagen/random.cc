#include "tools/datagen/random.h"

#include <cmath>

#include "glog/logging.h"

namespace petrel {
namespace datagen {
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

}  // namespace datagen
}  // namespace petrel
