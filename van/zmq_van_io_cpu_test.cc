// VanOptions::io_cpu: the van's I/O thread and ZeroMQ's I/O thread pinned
// to one CPU; a CPU the process may not use fails Start.
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <dirent.h>
#include <sched.h>
#include <sys/types.h>

#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "base/cpu_affinity.h"
#include "base/metrics.h"
#include "cluster/testing/van_cluster.h"
#include "van/zmq_van.h"

namespace petrel {
namespace {

using ::testing::HasSubstr;

VanOptions Local(int io_cpu) {
  VanOptions o;
  o.bind_host = "127.0.0.1";
  o.port = 0;
  o.io_cpu = io_cpu;
  return o;
}

// The CPU masks of this process's threads named `name`.
std::vector<cpu_set_t> MasksOfThreadsNamed(const std::string& name) {
  std::vector<cpu_set_t> masks;
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return masks;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream comm(std::string("/proc/self/task/") + e->d_name + "/comm");
    std::string comm_name;
    std::getline(comm, comm_name);
    if (comm_name != name) continue;
    cpu_set_t mask;
    CPU_ZERO(&mask);
    if (sched_getaffinity(static_cast<pid_t>(std::atoi(e->d_name)),
                          sizeof(mask), &mask) == 0) {
      masks.push_back(mask);
    }
  }
  closedir(dir);
  return masks;
}

// A van as node `id` that records the CPU mask of the thread each message
// is delivered on.
class Node {
 public:
  Node(int id, int io_cpu)
      : van_(std::make_unique<ZmqVan>(Local(io_cpu), &metrics_)) {
    van_->set_my_id(id);
  }
  absl::Status Start() {
    return van_->Start(
        [this](Message&&) {
          cpu_set_t mask;
          CPU_ZERO(&mask);
          sched_getaffinity(0, sizeof(mask), &mask);
          absl::MutexLock lock(&mu_);
          masks_.push_back(mask);
        },
        [] {});
  }
  pb::Node Self() const { return LoopbackNode(*van_, van_->my_id()); }
  bool WaitForMessage(absl::Duration timeout) {
    absl::MutexLock lock(&mu_);
    auto some = [this]()
                    ABSL_SHARED_LOCKS_REQUIRED(mu_) { return !masks_.empty(); };
    return mu_.AwaitWithTimeout(absl::Condition(&some), timeout);
  }
  cpu_set_t first_mask() {
    absl::MutexLock lock(&mu_);
    return masks_.front();
  }
  ZmqVan& van() { return *van_; }

 private:
  MetricsRegistry metrics_;
  absl::Mutex mu_;
  std::vector<cpu_set_t> masks_ ABSL_GUARDED_BY(mu_);
  // Last, so it is destroyed first: its I/O thread calls the handler above
  // until the van stops.
  std::unique_ptr<ZmqVan> van_;
};

TEST(ZmqVanIoCpuTest, ACpuTheProcessMayNotUseFailsStart) {
  MetricsRegistry metrics;
  ZmqVan van(Local(1023), &metrics);  // no test machine has CPU 1023
  absl::Status s = van.Start([](Message&&) {}, [] {});
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("io_cpu"));
  EXPECT_THAT(s.message(), HasSubstr("CPU 1023"));
}

TEST(ZmqVanIoCpuTest, PinsTheVanAndZeroMqIoThreadsAndStillDelivers) {
  const int cpu = FirstAllowedCpu();
  ASSERT_GE(cpu, 0);
  Node server(8, cpu);
  Node worker(9, cpu);
  ASSERT_TRUE(server.Start().ok());
  ASSERT_TRUE(worker.Start().ok());
  server.van().Connect(worker.Self());
  worker.van().Connect(server.Self());
  Message m;
  m.meta.set_sender(9);
  m.meta.set_recipient(8);
  m.meta.set_request(true);
  ASSERT_TRUE(worker.van().Send(std::move(m)).ok());
  ASSERT_TRUE(server.WaitForMessage(absl::Seconds(10)));
  // Delivered on the server's van I/O thread, pinned to `cpu` alone.
  cpu_set_t handler = server.first_mask();
  EXPECT_EQ(CPU_COUNT(&handler), 1);
  EXPECT_TRUE(CPU_ISSET(cpu, &handler));
  // Both vans' ZeroMQ I/O threads too.
  std::vector<cpu_set_t> io = MasksOfThreadsNamed("ZMQbg/IO/0");
  ASSERT_GE(io.size(), 2u);
  for (const cpu_set_t& mask : io) {
    EXPECT_EQ(CPU_COUNT(&mask), 1);
    EXPECT_TRUE(CPU_ISSET(cpu, &mask));
  }
}

}  // namespace
}  // namespace petrel
