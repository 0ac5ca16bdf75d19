// WaitUntil: polls a condition until it holds or a deadline passes, for
// tests that wait on state with no event to block on (a metric, a buffer's
// use count). Each poll sleeps only `poll_interval`, so a test waits no
// longer than the condition takes to become true.
//
// Thread safety: the function is thread-safe; `cond` runs on the caller's
// thread.
#ifndef PETREL_BASE_TESTING_WAIT_UNTIL_H_
#define PETREL_BASE_TESTING_WAIT_UNTIL_H_

#include <functional>

#include "absl/time/time.h"

namespace petrel {

// Returns true as soon as `cond()` is true, false if it is still false once
// `timeout` has passed. Checks `cond` at least once.
bool WaitUntil(const std::function<bool()>& cond,
               absl::Duration timeout = absl::Seconds(10),
               absl::Duration poll_interval = absl::Milliseconds(1));

}  // namespace petrel

#endif  // PETREL_BASE_TESTING_WAIT_UNTIL_H_
