// DedupSorted on CUDA against the CPU path on the same fresh random keys:
// integer results, so they must be identical.
#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"

#include "kernels/cuda_test_util.h"
#include "kernels/dedup.h"
#include "kernels/testing/random_batch.h"
#include "kernels/testing/traced_rng.h"

namespace petrel {
namespace {

class DedupCudaTest : public testing::CudaTest {
 protected:
  void ExpectSameAsCpu(const std::vector<uint64_t>& keys) {
    const size_t n = keys.size();
    std::vector<uint64_t> cpu_unique(n);
    std::vector<uint32_t> cpu_inverse(n);
    size_t cpu_count = 0;
    ASSERT_TRUE(DedupSorted(cpu_, keys, absl::MakeSpan(cpu_unique),
                            absl::MakeSpan(cpu_inverse), &cpu_count)
                    .ok());
    DeviceArray<uint64_t> d_keys = Upload(keys);
    DeviceArray<uint64_t> d_unique = Make<uint64_t>(n);
    DeviceArray<uint32_t> d_inverse = Make<uint32_t>(n);
    size_t count = 12345;
    ASSERT_TRUE(DedupSorted(gpu_, d_keys.span(), d_unique.span(),
                            d_inverse.span(), &count)
                    .ok());
    ASSERT_EQ(count, cpu_count);
    std::vector<uint64_t> unique = Download(d_unique);
    unique.resize(count);
    cpu_unique.resize(cpu_count);
    EXPECT_EQ(unique, cpu_unique);
    EXPECT_EQ(Download(d_inverse), cpu_inverse);
  }
};

TEST_F(DedupCudaTest, MatchesCpuOnRandomKeys) {
  testing::TracedRng rng;
  // Pools from "all equal" to "almost all distinct"; sizes cover one item,
  // a partial block and more than the grid of one pass (grid-stride).
  for (size_t n : {size_t{1}, size_t{1000}, size_t{3000017}}) {
    for (size_t pool : {size_t{1}, size_t{50}, n}) {
      SCOPED_TRACE(::testing::Message() << "n=" << n << " pool=" << pool);
      std::vector<uint64_t> values(pool);
      for (uint64_t& v : values) v = rng();
      values[0] = UINT64_MAX;
      if (pool > 1) values[1] = 0;
      std::uniform_int_distribution<size_t> pick(0, pool - 1);
      std::vector<uint64_t> keys(n);
      for (uint64_t& k : keys) k = values[pick(rng)];
      ExpectSameAsCpu(keys);
    }
  }
}

TEST_F(DedupCudaTest, EmptyKeysGiveNoUniqueKeys) {
  size_t count = 7;
  ASSERT_TRUE(DedupSorted(gpu_, {}, {}, {}, &count).ok());
  EXPECT_EQ(count, 0u);
}

TEST_F(DedupCudaTest, ReusedScratchGivesTheSameResult) {
  std::mt19937_64 rng(testing::FreshSeed());
  std::vector<uint64_t> big(200000), small(1000);
  for (uint64_t& k : big) k = rng() % 5000;
  for (uint64_t& k : small) k = rng() % 300;
  ExpectSameAsCpu(big);
  ExpectSameAsCpu(small);  // scratch larger than needed
  ExpectSameAsCpu(big);
}

}  // namespace
}  // namespace petrel
