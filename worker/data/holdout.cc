#include "worker/data/holdout.h"

#include "base/checksum.h"

namespace petrel {

bool IsHeldOut(absl::string_view line, double fraction, uint64_t seed) {
  // The top 53 bits, as a double in [0, 1) without rounding.
  const double u =
      static_cast<double>(Checksum64(line, seed) >> 11) * 0x1.0p-53;
  return u < fraction;
}

}  // namespace petrel
