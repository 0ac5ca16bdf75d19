#include "base/cpu_affinity.h"

#include <cerrno>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"

namespace petrel {
namespace {

// "0-1,4" for the CPUs in `cpus`.
std::string DescribeCpus(const cpu_set_t& cpus) {
  std::string out;
  int run_start = -1;
  for (int cpu = 0; cpu <= CPU_SETSIZE; ++cpu) {
    const bool in = cpu < CPU_SETSIZE && CPU_ISSET(cpu, &cpus);
    if (in && run_start < 0) run_start = cpu;
    if (!in && run_start >= 0) {
      if (!out.empty()) out += ",";
      absl::StrAppend(&out, run_start);
      if (cpu - 1 > run_start) absl::StrAppend(&out, "-", cpu - 1);
      run_start = -1;
    }
  }
  return out.empty() ? "none" : out;
}

}  // namespace

absl::Status CheckCpuAllowed(int cpu) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) {
    return absl::InternalError(
        absl::StrCat("sched_getaffinity: ", std::strerror(errno)));
  }
  if (cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &allowed)) {
    return absl::InvalidArgumentError(
        absl::StrCat("CPU ", cpu, " is not one this process may run on (",
                     DescribeCpus(allowed), ")"));
  }
  return absl::OkStatus();
}

absl::Status PinThread(pthread_t thread, int cpu) {
  if (absl::Status s = CheckCpuAllowed(cpu); !s.ok()) return s;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  if (int err = pthread_setaffinity_np(thread, sizeof(one), &one); err != 0) {
    return absl::InternalError(absl::StrCat("pinning a thread to CPU ", cpu,
                                            ": ", std::strerror(err)));
  }
  return absl::OkStatus();
}

absl::Status ThreadCpus(pthread_t thread, cpu_set_t* cpus) {
  CPU_ZERO(cpus);
  if (int err = pthread_getaffinity_np(thread, sizeof(*cpus), cpus); err != 0) {
    return absl::InternalError(
        absl::StrCat("pthread_getaffinity_np: ", std::strerror(err)));
  }
  return absl::OkStatus();
}

int FirstAllowedCpu() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return -1;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &allowed)) return cpu;
  }
  return -1;
}

ScopedCpuPin::ScopedCpuPin(int cpu) {
  status_ = ThreadCpus(pthread_self(), &previous_);
  if (status_.ok()) status_ = PinThread(pthread_self(), cpu);
}

ScopedCpuPin::~ScopedCpuPin() {
  if (status_.ok()) {
    pthread_setaffinity_np(pthread_self(), sizeof(previous_), &previous_);
  }
}

}  // namespace petrel
