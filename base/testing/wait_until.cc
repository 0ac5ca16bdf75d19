#include "base/testing/wait_until.h"

#include "absl/time/clock.h"

namespace petrel {

bool WaitUntil(const std::function<bool()>& cond, absl::Duration timeout,
               absl::Duration poll_interval) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!cond()) {
    if (absl::Now() > deadline) return false;
    absl::SleepFor(poll_interval);
  }
  return true;
}

}  // namespace petrel
