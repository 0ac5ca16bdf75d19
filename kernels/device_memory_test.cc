// Device selection and memory on the CPU device, which every build has;
// the CUDA paths are tested by device_memory_cuda_test.cc when a GPU is
// present. Opening CUDA is checked to fail cleanly where there is none.
#include "kernels/device_memory.h"

#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "gtest/gtest.h"

#include "kernels/device.h"

namespace petrel {
namespace {

const Device kCpu = Device::Cpu();

TEST(DeviceTest, CpuDeviceIsNamedCpu) {
  EXPECT_FALSE(kCpu.is_cuda());
  EXPECT_EQ(kCpu.kind(), DeviceKind::kCpu);
  EXPECT_EQ(kCpu.cuda(), nullptr);
  EXPECT_EQ(kCpu.name(), "cpu");
}

TEST(DeviceTest, ParsesDeviceChoices) {
  EXPECT_EQ(*ParseDeviceChoice("auto"), DeviceChoice::kAuto);
  EXPECT_EQ(*ParseDeviceChoice("cpu"), DeviceChoice::kCpu);
  EXPECT_EQ(*ParseDeviceChoice("cuda"), DeviceChoice::kCuda);
  for (const char* bad : {"", "gpu", "CUDA", "cuda:0", "cpu "}) {
    const auto choice = ParseDeviceChoice(bad);
    ASSERT_FALSE(choice.ok()) << bad;
    EXPECT_EQ(choice.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(std::string(choice.status().message())
                  .find("\"" + std::string(bad) + "\""),
              std::string::npos)
        << choice.status();
  }
}

TEST(DeviceTest, CudaDeviceCountExplainsZero) {
  std::string why;
  const int count = CudaDeviceCount(&why);
  EXPECT_GE(count, 0);
  if (!BuiltWithCuda()) {
    EXPECT_EQ(count, 0);
    EXPECT_EQ(why, "built without CUDA");
  }
  if (count == 0) {
    EXPECT_FALSE(why.empty());
  }
  EXPECT_EQ(CudaDeviceCount(), count);  // cached
}

TEST(DeviceTest, OpensTheCpu) {
  auto device = ComputeDevice::Open(DeviceChoice::kCpu);
  ASSERT_TRUE(device.ok()) << device.status();
  EXPECT_FALSE((*device)->device().is_cuda());
  EXPECT_EQ((*device)->device().name(), "cpu");
}

TEST(DeviceTest, AutoFallsBackToTheCpuWithoutCuda) {
  if (CudaDeviceCount() > 0) GTEST_SKIP() << "a CUDA device is present";
  auto device = ComputeDevice::Open(DeviceChoice::kAuto);
  ASSERT_TRUE(device.ok()) << device.status();
  EXPECT_FALSE((*device)->device().is_cuda());
}

TEST(DeviceTest, OpeningCudaFailsWithoutADevice) {
  if (CudaDeviceCount() > 0) GTEST_SKIP() << "a CUDA device is present";
  auto device = ComputeDevice::Open(DeviceChoice::kCuda);
  ASSERT_FALSE(device.ok());
  EXPECT_EQ(device.status().code(), absl::StatusCode::kFailedPrecondition);
  std::string why;
  CudaDeviceCount(&why);
  EXPECT_NE(std::string(device.status().message()).find(why), std::string::npos)
      << device.status();
}

TEST(DeviceTest, RejectsBadOrdinals) {
  // One past the last device fails on every machine.
  auto device = ComputeDevice::Open(DeviceChoice::kCuda, CudaDeviceCount());
  ASSERT_FALSE(device.ok());
  EXPECT_EQ(device.status().code(), absl::StatusCode::kFailedPrecondition);
  device = ComputeDevice::Open(DeviceChoice::kAuto, -1);
  ASSERT_FALSE(device.ok());
  EXPECT_EQ(device.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(DeviceMemoryTest, AllocatesAlignedHostMemory) {
  for (size_t bytes : {size_t{1}, size_t{63}, size_t{64}, size_t{1000}}) {
    auto ptr = DeviceAllocate(kCpu, bytes);
    ASSERT_TRUE(ptr.ok()) << ptr.status();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(*ptr) % 64, 0u);
    DeviceFree(kCpu, *ptr);
    ptr = PinnedAllocate(kCpu, bytes);
    ASSERT_TRUE(ptr.ok()) << ptr.status();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(*ptr) % 64, 0u);
    PinnedFree(kCpu, *ptr);
  }
  auto none = DeviceAllocate(kCpu, 0);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, nullptr);
  DeviceFree(kCpu, nullptr);  // a no-op
  EXPECT_TRUE(Synchronize(kCpu).ok());
}

TEST(DeviceMemoryTest, HugeAllocationIsResourceExhausted) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "ASan aborts on allocations this large";
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  GTEST_SKIP() << "ASan aborts on allocations this large";
#endif
#endif
  for (size_t bytes : {SIZE_MAX / 2, SIZE_MAX - 8}) {
    auto ptr = DeviceAllocate(kCpu, bytes);
    ASSERT_FALSE(ptr.ok());
    EXPECT_EQ(ptr.status().code(), absl::StatusCode::kResourceExhausted);
    EXPECT_NE(std::string(ptr.status().message()).find(std::to_string(bytes)),
              std::string::npos);
  }
}

TEST(DeviceMemoryTest, CopiesRoundTrip) {
  std::vector<float> host(100);
  std::iota(host.begin(), host.end(), 1.0f);
  DeviceArray<float> a(kCpu), b(kCpu);
  ASSERT_TRUE(a.Resize(host.size()).ok());
  ASSERT_TRUE(b.Resize(host.size()).ok());
  ASSERT_TRUE(CopyToDevice<float>(kCpu, host, a.span()).ok());
  ASSERT_TRUE(
      CopyDeviceToDevice(kCpu, a.data(), b.data(), host.size() * sizeof(float))
          .ok());
  std::vector<float> back(host.size(), -1.0f);
  ASSERT_TRUE(CopyToHost<float>(kCpu, b.span(), absl::MakeSpan(back)).ok());
  EXPECT_EQ(back, host);
  ASSERT_TRUE(FillZero(kCpu, b.data(), 10 * sizeof(float)).ok());
  ASSERT_TRUE(CopyToHost<float>(kCpu, b.span(), absl::MakeSpan(back)).ok());
  EXPECT_EQ(back[9], 0.0f);
  EXPECT_EQ(back[10], 11.0f);
  // Zero-byte copies touch nothing (null pointers are fine).
  EXPECT_TRUE(CopyHostToDevice(kCpu, nullptr, nullptr, 0).ok());
  EXPECT_TRUE(FillZero(kCpu, nullptr, 0).ok());
}

TEST(DeviceMemoryTest, TypedCopiesRejectSizeMismatches) {
  std::vector<float> host(4);
  DeviceArray<float> a(kCpu);
  ASSERT_TRUE(a.Resize(3).ok());
  EXPECT_EQ(CopyToDevice<float>(kCpu, host, a.span()).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CopyToHost<float>(kCpu, a.span(), absl::MakeSpan(host)).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(DeviceMemoryTest, ResizeReusesLargeEnoughAllocations) {
  PinnedArray<double> a(kCpu);
  EXPECT_EQ(a.data(), nullptr);
  ASSERT_TRUE(a.Resize(100).ok());
  double* first = a.data();
  ASSERT_NE(first, nullptr);
  a.span()[99] = 7.0;
  ASSERT_TRUE(a.Resize(10).ok());
  EXPECT_EQ(a.data(), first);
  EXPECT_EQ(a.size(), 10u);
  ASSERT_TRUE(a.Resize(100).ok());  // still within the capacity
  EXPECT_EQ(a.data(), first);
  EXPECT_EQ(a.span()[99], 7.0);
  ASSERT_TRUE(a.Resize(1000).ok());
  EXPECT_EQ(a.size(), 1000u);
  a.span()[999] = 1.0;  // ASan checks the new allocation's extent

  PinnedArray<double> moved = std::move(a);
  EXPECT_EQ(a.data(), nullptr);
  EXPECT_EQ(a.size(), 0u);
  EXPECT_EQ(moved.size(), 1000u);
  EXPECT_FALSE(moved.device().is_cuda());
}

}  // namespace
}  // namespace petrel
