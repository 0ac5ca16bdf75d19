// SignalWatcher: turns SIGTERM and SIGINT (and, when asked, SIGUSR1) into
// callbacks on an ordinary thread, so a daemon can stop cleanly (no work in
// a signal handler).
//
// Thread safety: the setters, Block, Start and Stop are called by the owner
// (main) only. REQUIRES: Block or Start is called before any other thread
// is created, so that every thread inherits the blocked signal mask.
#ifndef PETREL_BASE_SIGNAL_WATCHER_H_
#define PETREL_BASE_SIGNAL_WATCHER_H_

#include <atomic>
#include <functional>
#include <string>
#include <thread>

#include <signal.h>

namespace petrel {

class SignalWatcher {
 public:
  // Called on the watcher thread with the signal's name ("SIGTERM",
  // "SIGINT", "SIGUSR1").
  using Callback = std::function<void(const std::string& signal_name)>;

  SignalWatcher() = default;
  ~SignalWatcher() { Stop(); }
  SignalWatcher(const SignalWatcher&) = delete;
  SignalWatcher& operator=(const SignalWatcher&) = delete;

  // Before Start. Called for every SIGTERM/SIGINT after the first (e.g.
  // to stop at once). Default: none (later signals are ignored).
  void set_repeat_callback(Callback callback) { repeat_ = std::move(callback); }
  // Before Start. Watches SIGUSR1 too and calls `callback` for each one.
  // Default: SIGUSR1 keeps its default action (it ends the process).
  void set_usr1_callback(Callback callback) { usr1_ = std::move(callback); }

  // Blocks the watched signals in the calling thread, so that threads it
  // creates from now on inherit the mask (call it before any thread
  // starts, then Start when the callbacks can run). Start calls it too.
  void Block();
  // `callback` is called for the first SIGTERM or SIGINT, once.
  void Start(Callback callback);
  void Stop();  // idempotent
  // The first SIGTERM/SIGINT received so far, or 0.
  int received() const { return received_.load(); }

 private:
  sigset_t Signals() const;

  std::thread thread_;
  Callback repeat_;
  Callback usr1_;
  std::atomic<bool> stop_{false};
  std::atomic<int> received_{0};
};

}  // namespace petrel

#endif  // PETREL_BASE_SIGNAL_WATCHER_H_
