// Initializer: the first value of a new table row. A row's values depend
// only on (seed, table id, key, column): each value comes from a
// counter-based generator (splitmix64 over those four numbers), so a key
// starts with the same weights whichever server holds it, whenever it is
// first touched, and in whatever order keys arrive.
//
//   zeros     0
//   uniform   uniform in [-scale, scale]
//   normal    normal with mean 0 and standard deviation scale (Box-Muller)
//
// Thread safety: an Initializer is immutable; Fill may run concurrently.
#ifndef PETREL_SERVER_INITIALIZER_H_
#define PETREL_SERVER_INITIALIZER_H_

#include <cstdint>

#include "absl/status/statusor.h"

namespace petrel {

enum class InitializerKind { kZeros, kUniform, kNormal };

struct InitializerConfig {
  InitializerKind kind = InitializerKind::kZeros;
  float scale = 0.0f;  // uniform: half-width; normal: stddev; >= 0, finite
  uint64_t seed = 0;
};

class Initializer {
 public:
  // InvalidArgument when scale is negative or not finite.
  static absl::StatusOr<Initializer> Create(const InitializerConfig& config,
                                            int table_id);

  // Writes the `dim` first values of `key`'s row to row[0..dim).
  void Fill(uint64_t key, float* row, int dim) const;

  const InitializerConfig& config() const { return config_; }

 private:
  Initializer(const InitializerConfig& config, int table_id)
      : config_(config), table_id_(table_id) {}

  InitializerConfig config_;
  int table_id_;
};

}  // namespace petrel

#endif  // PETREL_SERVER_INITIALIZER_H_
