// ConnectionGuard: holds the peers of a ZmqVan's ROUTER to their budgets
// (PeerBudget, security/peer_registry.h). A thread reads the ROUTER's ZeroMQ
// monitor events (a connection accepted on descriptor fd, or gone), asks the
// kernel every check_interval how many bytes TCP received on each
// connection (TCP_INFO), and cuts a connection over its budget with
// shutdown(2), which makes ZeroMQ drop the connection and free the message
// it was assembling. The van reports every message it receives (Delivered,
// with the descriptor ZeroMQ read it from, ZMQ_SRCFD). Each cut is counted in
// petrel_van_connections_cut_total{reason} and logged (rate limited).
//
// Thread safety: Start and Stop from the van's owner; Delivered from any
// thread.
#ifndef PETREL_SECURITY_CONNECTION_GUARD_H_
#define PETREL_SECURITY_CONNECTION_GUARD_H_

#include <atomic>
#include <functional>
#include <map>
#include <string>
#include <thread>

#include "absl/status/status.h"

#include "base/metrics.h"
#include "security/peer_registry.h"

namespace petrel {

class ConnectionGuard {
 public:
  // `router` is monitored through inproc endpoint `monitor_endpoint`.
  // `member_bytes` is the resolved PeerBudget::member_bytes.
  ConnectionGuard(void* context, void* router, std::string monitor_endpoint,
                  const PeerBudget& budget, int64_t member_bytes,
                  MetricsRegistry* metrics);
  ~ConnectionGuard();
  ConnectionGuard(const ConnectionGuard&) = delete;
  ConnectionGuard& operator=(const ConnectionGuard&) = delete;

  // Called on the guard's thread for each failed handshake on `router`
  // (CURVE: a plaintext peer or an unknown server key); the guard holds the
  // socket's one monitor. Set before Start. Default: none.
  void set_on_handshake_failed(std::function<void()> callback) {
    on_handshake_failed_ = std::move(callback);
  }

  // Starts monitoring and the thread. REQUIRES: called on the thread that
  // owns `router`, before anything else uses it.
  absl::Status Start();
  // Stops the thread and closes the monitor socket; idempotent. Must run
  // before the ZeroMQ context is terminated.
  void Stop();
  // A whole message of `wire_bytes` arrived on descriptor `fd`;
  // `is_member()` says whether its sender is a member of the cluster
  // (asked only until the connection is known as one).
  void Delivered(int fd, int64_t wire_bytes,
                 absl::FunctionRef<bool()> is_member);

 private:
  void Run();
  // Reads the queued monitor events into registry_.
  void DrainEvents();
  void CutOver(bool include_members);

  std::function<void()> on_handshake_failed_;
  void* const context_;
  void* const router_;
  const std::string endpoint_;
  const PeerBudget budget_;
  PeerRegistry registry_;
  void* pair_ = nullptr;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::map<PeerRegistry::Reason, Counter*> cut_;
  Gauge* non_members_;
};

// Raises the soft limit on open file descriptors to the hard limit, so a
// flood of connections does not leave a daemon unable to accept its own
// nodes (daemons call it at start-up). Returns the soft limit now in force.
int RaiseFileDescriptorLimit();
// The soft limit on open file descriptors.
int FileDescriptorLimit();

}  // namespace petrel

#endif  // PETREL_SECURITY_CONNECTION_GUARD_H_
