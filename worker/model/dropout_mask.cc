#include "worker/model/dropout_mask.h"

#include <cmath>

#include "worker/data/feature_hash.h"

namespace petrel {

void FillDropoutMask(uint64_t seed, uint64_t step, uint64_t layer, float rate,
                     absl::Span<float> mask) {
  if (rate <= 0.0f) {
    for (float& m : mask) m = 1.0f;
    return;
  }
  const float keep = 1.0f / (1.0f - rate);
  // A unit is dropped when the top 24 bits of its hash, as a fraction of
  // 2^24, are below `rate`.
  const uint64_t threshold =
      static_cast<uint64_t>(std::ceil(static_cast<double>(rate) * (1 << 24)));
  const uint64_t base =
      Mix64(Mix64(Mix64(seed + 0x9e3779b97f4a7c15ULL) ^ step) ^ (layer + 1));
  for (size_t i = 0; i < mask.size(); ++i) {
    const uint64_t h = Mix64(base + 0x9e3779b97f4a7c15ULL * (i + 1)) >> 40;
    mask[i] = h < threshold ? 0.0f : keep;
  }
}

}  // namespace petrel
