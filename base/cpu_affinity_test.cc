#include "base/cpu_affinity.h"

#include <atomic>
#include <thread>

#include <pthread.h>
#include <sched.h>

#include "gtest/gtest.h"

namespace petrel {
namespace {

TEST(CpuAffinityTest, AllowedCpuPasses) {
  const int cpu = FirstAllowedCpu();
  ASSERT_GE(cpu, 0);
  EXPECT_TRUE(CheckCpuAllowed(cpu).ok());
}

TEST(CpuAffinityTest, OutOfRangeCpuIsRejectedWithTheAllowedOnes) {
  for (int cpu : {-1, CPU_SETSIZE, CPU_SETSIZE + 7}) {
    absl::Status s = CheckCpuAllowed(cpu);
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << cpu << ": " << s;
    EXPECT_NE(s.message().find("may run on ("), absl::string_view::npos) << s;
  }
  EXPECT_TRUE(absl::IsInvalidArgument(PinThread(pthread_self(), -1)));
}

TEST(CpuAffinityTest, PinThreadRestrictsAnotherThreadToOneCpu) {
  const int cpu = FirstAllowedCpu();
  ASSERT_GE(cpu, 0);
  std::atomic<bool> done{false};
  std::thread t([&done] {  // alive until told, so that it can be pinned
    while (!done.load()) std::this_thread::yield();
  });
  absl::Status pinned = PinThread(t.native_handle(), cpu);
  cpu_set_t cpus;
  absl::Status read = ThreadCpus(t.native_handle(), &cpus);
  done = true;
  t.join();
  ASSERT_TRUE(pinned.ok()) << pinned;
  ASSERT_TRUE(read.ok()) << read;
  EXPECT_EQ(CPU_COUNT(&cpus), 1);
  EXPECT_TRUE(CPU_ISSET(cpu, &cpus));
}

TEST(CpuAffinityTest, ScopedPinRestoresThePreviousMask) {
  const int cpu = FirstAllowedCpu();
  ASSERT_GE(cpu, 0);
  // On a thread of its own, so that the test's main thread keeps its mask
  // whatever happens.
  std::thread t([cpu] {
    cpu_set_t before;
    ASSERT_TRUE(ThreadCpus(pthread_self(), &before).ok());
    {
      ScopedCpuPin pin(cpu);
      ASSERT_TRUE(pin.status().ok()) << pin.status();
      cpu_set_t pinned;
      ASSERT_TRUE(ThreadCpus(pthread_self(), &pinned).ok());
      EXPECT_EQ(CPU_COUNT(&pinned), 1);
      EXPECT_TRUE(CPU_ISSET(cpu, &pinned));
      EXPECT_EQ(sched_getcpu(), cpu);
    }
    cpu_set_t after;
    ASSERT_TRUE(ThreadCpus(pthread_self(), &after).ok());
    EXPECT_TRUE(CPU_EQUAL(&before, &after));
  });
  t.join();
}

TEST(CpuAffinityTest, ScopedPinToABadCpuChangesNothing) {
  std::thread t([] {
    cpu_set_t before;
    ASSERT_TRUE(ThreadCpus(pthread_self(), &before).ok());
    {
      ScopedCpuPin pin(-3);
      EXPECT_TRUE(absl::IsInvalidArgument(pin.status()));
    }
    cpu_set_t after;
    ASSERT_TRUE(ThreadCpus(pthread_self(), &after).ok());
    EXPECT_TRUE(CPU_EQUAL(&before, &after));
  });
  t.join();
}

}  // namespace
}  // namespace petrel
