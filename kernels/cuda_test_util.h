// Test-only helpers of the <op>_cuda_test.cc files: a fixture that opens
// cuda:0 (or skips the test, visibly, when the machine has no usable CUDA
// device) and typed uploads and downloads.
#ifndef PETREL_KERNELS_CUDA_TEST_UTIL_H_
#define PETREL_KERNELS_CUDA_TEST_UTIL_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/types/span.h"
#include "gtest/gtest.h"

#include "kernels/cuda_context.h"
#include "kernels/device.h"
#include "kernels/device_memory.h"

namespace petrel {
namespace testing {

class CudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (CudaDeviceCount(&why) == 0) {
      GTEST_SKIP() << "no CUDA device: " << why;
    }
    absl::StatusOr<std::unique_ptr<CudaContext>> ctx = CudaContext::Create(0);
    ASSERT_TRUE(ctx.ok()) << ctx.status();
    ctx_ = std::move(*ctx);
    gpu_ = Device::Cuda(ctx_.get());
  }

  // A device copy of `host` (synchronized, so `host` may change after).
  template <typename T>
  DeviceArray<T> Upload(const std::vector<T>& host) {
    DeviceArray<T> a(gpu_);
    EXPECT_TRUE(a.Resize(host.size()).ok());
    EXPECT_TRUE(
        CopyToDevice<T>(gpu_, absl::MakeConstSpan(host), a.span()).ok());
    EXPECT_TRUE(Synchronize(gpu_).ok());
    return a;
  }

  // An uninitialized device array of n elements.
  template <typename T>
  DeviceArray<T> Make(size_t n) {
    DeviceArray<T> a(gpu_);
    EXPECT_TRUE(a.Resize(n).ok());
    return a;
  }

  // Waits for the stream and copies `a` back.
  template <typename T>
  std::vector<T> Download(const DeviceArray<T>& a) {
    std::vector<T> host(a.size());
    EXPECT_TRUE(CopyToHost<T>(gpu_, a.span(), absl::MakeSpan(host)).ok());
    EXPECT_TRUE(Synchronize(gpu_).ok());
    return host;
  }

  std::unique_ptr<CudaContext> ctx_;
  Device gpu_;
  Device cpu_ = Device::Cpu();
};

}  // namespace testing
}  // namespace petrel

#endif  // PETREL_KERNELS_CUDA_TEST_UTIL_H_
