// Inverted-dropout masks for the MLP's hidden layers (model.dropout).
//
// Each entry of a mask is 0 (the unit is dropped) with probability `rate`
// and 1 / (1 - rate) otherwise, so that a layer's expected output in
// training is its output in evaluation. Entry i of the mask for (seed, step,
// layer) is a hash of the four, not a draw from a stream: the masks repeat
// exactly for the same arguments, on any thread, in any order.
#ifndef PETREL_WORKER_MODEL_DROPOUT_MASK_H_
#define PETREL_WORKER_MODEL_DROPOUT_MASK_H_

#include <cstdint>

#include "absl/types/span.h"

namespace petrel {

// Fills `mask` for batch `step` and hidden layer `layer`; `rate` in [0, 1)
// (0 fills it with 1).
void FillDropoutMask(uint64_t seed, uint64_t step, uint64_t layer, float rate,
                     absl::Span<float> mask);

}  // namespace petrel

#endif  // PETREL_WORKER_MODEL_DROPOUT_MASK_H_
