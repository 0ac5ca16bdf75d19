#include "server/initializer.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace petrel {
namespace {

// splitmix64's finalizer: a bijective, well-mixed 64-bit hash.
uint64_t Mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// A uniform double in (0, 1] from the top 53 bits of `bits`.
double Unit(uint64_t bits) {
  return (static_cast<double>(bits >> 11) + 1.0) * 0x1.0p-53;
}

}  // namespace

absl::StatusOr<Initializer> Initializer::Create(const InitializerConfig& config,
                                                int table_id) {
  if (!(config.scale >= 0.0f) || !std::isfinite(config.scale)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "initializer scale = ", config.scale, " is not a finite value >= 0"));
  }
  switch (config.kind) {
    case InitializerKind::kZeros:
    case InitializerKind::kUniform:
    case InitializerKind::kNormal:
      return Initializer(config, table_id);
  }
  return absl::InvalidArgumentError("unknown initializer kind");
}

void Initializer::Fill(uint64_t key, float* row, int dim) const {
  if (config_.kind == InitializerKind::kZeros || config_.scale == 0.0f) {
    for (int i = 0; i < dim; ++i) row[i] = 0.0f;
    return;
  }
  // One stream per (seed, table, key); column i draws counters 2i and 2i+1.
  const uint64_t stream =
      Mix(Mix(config_.seed) ^
          Mix(static_cast<uint64_t>(table_id_) + 0x632be59bd9b4e019ULL) ^ key);
  const double scale = config_.scale;
  for (int i = 0; i < dim; ++i) {
    const uint64_t c = stream + 2 * static_cast<uint64_t>(i);
    const double u1 = Unit(Mix(c));
    if (config_.kind == InitializerKind::kUniform) {
      row[i] = static_cast<float>(scale * (2.0 * u1 - 1.0));
    } else {
      const double u2 = Unit(Mix(c + 1));
      const double z = std::sqrt(-2.0 * std::log(u1)) *
                       std::cos(2.0 * 3.14159265358979323846 * u2);
      row[i] = static_cast<float>(scale * z);
    }
  }
}

}  // namespace petrel
