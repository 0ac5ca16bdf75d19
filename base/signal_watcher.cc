#include "base/signal_watcher.h"

#include <ctime>

#include <pthread.h>

namespace petrel {

sigset_t SignalWatcher::Signals() const {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  if (usr1_) sigaddset(&set, SIGUSR1);
  return set;
}

void SignalWatcher::Block() {
  sigset_t set = Signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

void SignalWatcher::Start(Callback callback) {
  Block();
  const sigset_t set = Signals();
  thread_ = std::thread([this, set, callback = std::move(callback)] {
    // A short timeout lets Stop end the thread without another signal.
    timespec timeout{0, 100 * 1000 * 1000};
    while (!stop_) {
      int sig = sigtimedwait(&set, nullptr, &timeout);
      if (sig <= 0) continue;
      if (sig == SIGUSR1) {
        usr1_("SIGUSR1");
        continue;
      }
      const std::string name = sig == SIGTERM ? "SIGTERM" : "SIGINT";
      if (received_.exchange(sig) == 0) {
        callback(name);
      } else if (repeat_) {
        repeat_(name);
      }
    }
  });
}

void SignalWatcher::Stop() {
  if (!thread_.joinable()) return;
  stop_ = true;
  thread_.join();
}

}  // namespace petrel
