// Portable, seeded random sources for petrel-datagen. Everything here is
// implemented by hand (no <random> distributions, whose output differs
// between standard libraries) so that a seed gives the same bytes on every
// platform.
//
// Thread safety: an Rng is not thread-safe; HashNormal is a pure function.
// (Zipf draws: base/zipf_sampler.h, fed from an Rng.)
#ifndef PETREL_TOOLS_DATAGEN_RANDOM_H_
#define PETREL_TOOLS_DATAGEN_RANDOM_H_

#include <cstdint>

namespace petrel {
namespace datagen {

// SplitMix64: a small, fast generator with 64 bits of state.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}

  uint64_t Next();
  // Uniform in [0, 1), 53 random bits.
  double Uniform();
  // Standard normal (Box-Muller; the second value is kept for the next call).
  double Normal();

 private:
  uint64_t state_;
  bool has_spare_ = false;
  double spare_ = 0;
};

// An approximately standard normal value that is a pure function of `bits`
// (Irwin-Hall: the sum of four 16-bit uniforms, scaled to unit variance;
// bounded by +-3.46). Used for weights drawn from a hash.
double HashNormal(uint64_t bits);

}  // namespace datagen
}  // namespace petrel

#endif  // PETREL_TOOLS_DATAGEN_RANDOM_H_
