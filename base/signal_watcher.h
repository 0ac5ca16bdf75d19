// SignalWatcher: turns SIGTERM and SIGINT into a callback on an ordinary
// thread, so a daemon can stop cleanly (no work in a signal handler).
//
// Thread safety: Start and Stop are called by the owner (main) only.
// REQUIRES: Start is called before any other thread is created, so that
// every thread inherits the blocked signal mask.
#ifndef PETREL_BASE_SIGNAL_WATCHER_H_
#define PETREL_BASE_SIGNAL_WATCHER_H_

#include <atomic>
#include <functional>
#include <string>
#include <thread>

namespace petrel {

class SignalWatcher {
 public:
  // Called on the watcher thread with "SIGTERM" or "SIGINT"; at most once.
  using Callback = std::function<void(const std::string& signal_name)>;

  SignalWatcher() = default;
  ~SignalWatcher() { Stop(); }
  SignalWatcher(const SignalWatcher&) = delete;
  SignalWatcher& operator=(const SignalWatcher&) = delete;

  void Start(Callback callback);
  void Stop();  // idempotent
  // The signal received so far, or 0.
  int received() const { return received_.load(); }

 private:
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<int> received_{0};
};

}  // namespace petrel

#endif  // PETREL_BASE_SIGNAL_WATCHER_H_
