// TcpProxy: a TCP forwarder on a loopback port for fault tests. It listens
// on 127.0.0.1 (a free port), and forwards each accepted connection to
// 127.0.0.1:target, bytes unchanged, in both directions. On command it cuts
// every connection at once (both sides closed, bytes in flight inside the
// proxy dropped: what a broken network path does to a TCP stream) while new
// connections are still accepted, or holds all bytes back for a while (a
// delay) and then sends them on.
//
// Give a daemon --advertise_port=<proxy port> to have its peers reach it
// through the proxy. Until set_target is called the proxy accepts nothing
// (connections wait in the listen backlog), so the proxy can be started
// before the daemon whose bound port it needs.
//
// Thread safety: thread-safe; one thread of its own does the forwarding.
#ifndef PETREL_TESTS_HARNESS_TCP_PROXY_H_
#define PETREL_TESTS_HARNESS_TCP_PROXY_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace petrel {

class TcpProxy {
 public:
  // Listens on a free loopback port and starts the forwarding thread.
  static absl::StatusOr<std::unique_ptr<TcpProxy>> Start();
  ~TcpProxy();  // closes everything and joins the thread
  TcpProxy(const TcpProxy&) = delete;
  TcpProxy& operator=(const TcpProxy&) = delete;

  int port() const { return port_; }
  // Forwards to 127.0.0.1:`port` from now on.
  void set_target(int port);
  // Closes every open connection (both sides), dropping what the proxy
  // holds. Returns once done.
  void CutAll();
  // Counts, from now on, every occurrence of `pattern` in the bytes
  // forwarded in either direction (pattern_hits()); e.g. to check that
  // traffic is encrypted. Empty stops counting.
  void Watch(const std::string& pattern);
  int64_t pattern_hits() const { return pattern_hits_.load(); }
  // While held, bytes are read but not sent on; releasing sends them.
  void set_hold(bool hold);

  int64_t connections() const { return connections_.load(); }
  int64_t cuts() const { return cuts_.load(); }
  int64_t bytes() const { return bytes_.load(); }

 private:
  TcpProxy(int listen_fd, int port, int wake_fd);
  void Loop();
  void Wake();

  const int listen_fd_;
  const int port_;
  const int wake_fd_;
  std::atomic<int> target_{0};
  std::atomic<bool> hold_{false};
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> connections_{0};
  std::atomic<int64_t> cuts_{0};
  std::atomic<int64_t> bytes_{0};
  std::atomic<int64_t> pattern_hits_{0};
  absl::Mutex mu_;
  uint64_t cut_requested_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t cut_done_ ABSL_GUARDED_BY(mu_) = 0;
  std::string pattern_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace petrel

#endif  // PETREL_TESTS_HARNESS_TCP_PROXY_H_
