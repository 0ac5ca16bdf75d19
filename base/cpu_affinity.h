// CPU affinity of threads: pins a thread to one CPU, checks that a CPU is
// one this process may run on, and pins the calling thread for a scope.
//
// On a small VM every wake-up of a thread on another vCPU costs tens of
// microseconds (an inter-processor interrupt, often a halted vCPU to
// resume), while a switch between two threads on one CPU costs a few. A
// request that passes through a chain of threads one after the other (the
// van's I/O thread, ZeroMQ's I/O thread) is faster when that chain shares a
// CPU (VanOptions::io_cpu, docs/threading.md).
//
//   PETREL_RETURN_IF_ERROR(CheckCpuAllowed(cpu));
//   PETREL_RETURN_IF_ERROR(PinThread(thread.native_handle(), cpu));
//   { ScopedCpuPin pin(cpu); ... }  // the calling thread, restored after
//
// Thread safety: stateless functions, safe from any thread. A ScopedCpuPin
// belongs to the thread that made it.
#ifndef PETREL_BASE_CPU_AFFINITY_H_
#define PETREL_BASE_CPU_AFFINITY_H_

#include <pthread.h>
#include <sched.h>

#include "absl/status/status.h"

namespace petrel {

// OK when this process may run on `cpu` (its affinity mask holds it);
// InvalidArgument naming the CPUs it may use otherwise.
absl::Status CheckCpuAllowed(int cpu);

// Restricts `thread` to `cpu` (CheckCpuAllowed first).
absl::Status PinThread(pthread_t thread, int cpu);

// The CPUs `thread` may run on (a test and debug aid).
absl::Status ThreadCpus(pthread_t thread, cpu_set_t* cpus);

// The lowest CPU this process may run on, or -1 when its mask cannot be
// read.
int FirstAllowedCpu();

// Pins the calling thread to `cpu` for its lifetime and gives the thread
// its previous mask back when destroyed. ok() says whether it pinned;
// nothing changes when it did not.
class ScopedCpuPin {
 public:
  explicit ScopedCpuPin(int cpu);
  ~ScopedCpuPin();
  ScopedCpuPin(const ScopedCpuPin&) = delete;
  ScopedCpuPin& operator=(const ScopedCpuPin&) = delete;

  const absl::Status& status() const { return status_; }

 private:
  cpu_set_t previous_;
  absl::Status status_;
};

}  // namespace petrel

#endif  // PETREL_BASE_CPU_AFFINITY_H_
