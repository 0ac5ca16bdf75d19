// CUDA device memory (kernels/device_memory.h, cuda_context.h): round trips
// through device and pinned memory, zero fill, and out-of-memory as a
// Status. Tests that need a GPU skip (visibly) without one; the no-device
// tests run on machines without one.
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"

#include "kernels/cuda_context.h"
#include "kernels/cuda_test_util.h"
#include "kernels/device.h"
#include "kernels/device_memory.h"
#include "kernels/testing/random_batch.h"
#include "kernels/testing/traced_rng.h"

namespace petrel {
namespace {

using testing::CudaTest;

class DeviceMemoryCudaTest : public CudaTest {};

TEST_F(DeviceMemoryCudaTest, RoundTripThroughDeviceAndPinnedPreservesBits) {
  testing::TracedRng rng;
  const std::vector<float> host =
      testing::RandomNonZero(100003, 1e-3f, 1e3f, &rng);
  DeviceArray<float> a = Upload(host);
  DeviceArray<float> b = Make<float>(host.size());
  ASSERT_TRUE(
      CopyDeviceToDevice(gpu_, a.data(), b.data(), host.size() * sizeof(float))
          .ok());
  PinnedArray<float> pinned(gpu_);
  ASSERT_TRUE(pinned.Resize(host.size()).ok());
  ASSERT_TRUE(CopyToHost<float>(gpu_, b.span(), pinned.span()).ok());
  ASSERT_TRUE(Synchronize(gpu_).ok());
  EXPECT_EQ(
      0, std::memcmp(host.data(), pinned.data(), host.size() * sizeof(float)));
}

TEST_F(DeviceMemoryCudaTest, FillZeroZeroesEveryByte) {
  std::mt19937_64 rng(testing::FreshSeed());
  DeviceArray<float> a = Upload(testing::RandomNonZero(4099, 1, 2, &rng));
  ASSERT_TRUE(FillZero(gpu_, a.data(), a.size() * sizeof(float)).ok());
  for (float x : Download(a)) ASSERT_EQ(x, 0.0f);
}

TEST_F(DeviceMemoryCudaTest, AllocationsAreAligned) {
  for (size_t bytes : {1, 3, 64, 1000}) {
    absl::StatusOr<void*> p = DeviceAllocate(gpu_, bytes);
    ASSERT_TRUE(p.ok()) << p.status();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(*p) % 64, 0u);
    DeviceFree(gpu_, *p);
  }
}

TEST_F(DeviceMemoryCudaTest, OutOfMemoryIsResourceExhaustedNotACrash) {
  const size_t absurd = size_t{1} << 50;  // 1 PiB
  absl::StatusOr<void*> p = DeviceAllocate(gpu_, absurd);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kResourceExhausted)
      << p.status();
  EXPECT_NE(p.status().message().find("cudaMalloc"), std::string::npos)
      << p.status();
  DeviceArray<float> array(gpu_);
  EXPECT_EQ(array.Resize(absurd / sizeof(float)).code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(ctx_->Scratch(0, size_t{1} << 47).status().code(),
            absl::StatusCode::kResourceExhausted);
  // The failure left no error behind: the device still works.
  std::mt19937_64 rng(testing::FreshSeed());
  const std::vector<float> host = testing::RandomNonZero(1000, 1, 2, &rng);
  EXPECT_EQ(Download(Upload(host)), host);
  absl::StatusOr<void*> scratch = ctx_->Scratch(0, 1 << 20);
  EXPECT_TRUE(scratch.ok()) << scratch.status();
}

TEST_F(DeviceMemoryCudaTest, DeviceNameNamesTheGpu) {
  EXPECT_EQ(gpu_.name().rfind("cuda:0", 0), 0u) << gpu_.name();
  EXPECT_FALSE(ctx_->device_name().empty());
}

// These run everywhere: a bad ordinal, and no device at all, are
// FailedPrecondition rather than a crash.
TEST(CudaContextTest, BadOrdinalIsFailedPrecondition) {
  absl::StatusOr<std::unique_ptr<CudaContext>> ctx =
      CudaContext::Create(1 << 20);
  ASSERT_FALSE(ctx.ok());
  EXPECT_EQ(ctx.status().code(), absl::StatusCode::kFailedPrecondition)
      << ctx.status();
}

// Never skips (deploy/gpu-check.sh fails on skipped tests): with a device
// the context opens; without one, the count says why and Create fails.
TEST(CudaContextTest, CreateSucceedsExactlyWhenADeviceExists) {
  std::string why;
  const int count = CudaDeviceCount(&why);
  absl::StatusOr<std::unique_ptr<CudaContext>> ctx = CudaContext::Create(0);
  if (count > 0) {
    ASSERT_TRUE(ctx.ok()) << ctx.status();
    EXPECT_EQ((*ctx)->ordinal(), 0);
    return;
  }
  EXPECT_FALSE(why.empty());
  ASSERT_FALSE(ctx.ok());
  EXPECT_EQ(ctx.status().code(), absl::StatusCode::kFailedPrecondition)
      << ctx.status();
}

}  // namespace
}  // namespace petrel
