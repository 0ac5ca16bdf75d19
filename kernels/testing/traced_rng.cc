#include "kernels/testing/traced_rng.h"

#include "absl/strings/str_cat.h"

#include "kernels/testing/random_batch.h"

namespace petrel {
namespace testing {

TracedRng::TracedRng() : TracedRng(FreshSeed()) {}

TracedRng::TracedRng(uint64_t seed)
    : std::mt19937_64(seed),
      trace_(__FILE__, __LINE__, absl::StrCat("seed=", seed)) {}

}  // namespace testing
}  // namespace petrel
