// The validation split of data.validation_fraction (proto/job.proto): an
// example is held out of training when the XXH64 of its line's bytes,
// seeded, scaled to [0, 1), is below the fraction. The split depends only
// on the line's text and the seed: the same on every worker, epoch and
// run, whatever the share; identical lines fall on the same side.
//
// Thread-safe (pure functions).
#ifndef PETREL_WORKER_DATA_HOLDOUT_H_
#define PETREL_WORKER_DATA_HOLDOUT_H_

#include <cstdint>

#include "absl/strings/string_view.h"

namespace petrel {

// Which examples of the input a reader returns.
enum class HoldoutPart {
  kAll,      // every example (no split; the default)
  kTrain,    // those not held out
  kHeldOut,  // the held-out ones (the validation set)
};

struct HoldoutOptions {
  HoldoutPart part = HoldoutPart::kAll;
  double fraction = 0;  // 0 <= fraction < 1
  uint64_t seed = 0;
};

// True when the example on `line` is held out.
bool IsHeldOut(absl::string_view line, double fraction, uint64_t seed);

// True when a reader with `options` returns the example on `line`.
inline bool KeepLine(const HoldoutOptions& options, absl::string_view line) {
  if (options.part == HoldoutPart::kAll) return true;
  return IsHeldOut(line, options.fraction, options.seed) ==
         (options.part == HoldoutPart::kHeldOut);
}

}  // namespace petrel

#endif  // PETREL_WORKER_DATA_HOLDOUT_H_
