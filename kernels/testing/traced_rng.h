// TracedRng: the kernel tests' random generator, seeded afresh on every run
// (FreshSeed, kernels/testing/random_batch.h) and naming its seed in the
// trace of every failure while it lives, so a failure can be replayed
// (test-only library petrel_kernels_traced_rng).
//
//   TEST(FooTest, MatchesReference) {
//     testing::TracedRng rng;
//     const RandomBatch b = testing::MakeRandomBatch(..., &rng);
//
// Thread safety: thread-compatible, like std::mt19937_64; create and
// destroy it on the test's thread (GoogleTest's ScopedTrace).
#ifndef PETREL_KERNELS_TESTING_TRACED_RNG_H_
#define PETREL_KERNELS_TESTING_TRACED_RNG_H_

#include <cstdint>
#include <random>

#include "gtest/gtest.h"

namespace petrel {
namespace testing {

class TracedRng : public std::mt19937_64 {
 public:
  TracedRng();
  TracedRng(const TracedRng&) = delete;
  TracedRng& operator=(const TracedRng&) = delete;

 private:
  explicit TracedRng(uint64_t seed);

  ::testing::ScopedTrace trace_;
};

}  // namespace testing
}  // namespace petrel

#endif  // PETREL_KERNELS_TESTING_TRACED_RNG_H_
