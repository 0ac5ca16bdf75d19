// A minimal HTTP/1.x server that exposes a MetricsRegistry to Prometheus.
//
// It serves `GET /metrics` (the registry in text format 0.0.4) and
// `GET /healthz` ("ok"), answers 404 for other paths, 405 for other methods
// and 400 for malformed requests, and closes every connection after one
// reply. It runs one background thread that multiplexes all connections with
// poll(), so a slow or hostile client delays nobody: each connection gets a
// bounded request size and a deadline, after which it is closed.

#ifndef PETREL_BASE_METRICS_HTTP_SERVER_H_
#define PETREL_BASE_METRICS_HTTP_SERVER_H_

#include <atomic>
#include <cstddef>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/time/time.h"

#include "base/metrics.h"

namespace petrel {

struct MetricsHttpServerOptions {
  // Most bytes of one request (request line plus headers) that are read; a
  // longer request gets 400. Default 8 KiB; must be >= 64.
  size_t max_request_bytes = 8 * 1024;
  // Deadline for one connection, from accept to close, covering reading the
  // request and writing the reply. Default 2 s; must be > 0.
  absl::Duration connection_timeout = absl::Seconds(2);
  // Most connections served at once; further ones wait in the kernel's
  // listen backlog. Default 64; must be >= 1.
  int max_connections = 64;
};

// Serves one registry over HTTP on a background thread.
//
// Thread safety: Start() and Stop() must be called from one owning thread
// (not concurrently with each other); port() may be called from any thread.
// The registry is read from the server's thread, which is safe because
// MetricsRegistry is thread-safe.
class MetricsHttpServer {
 public:
  // `registry` is not owned and must outlive this server.
  // REQUIRES: registry != nullptr and `options` within the ranges above.
  explicit MetricsHttpServer(const MetricsRegistry* registry,
                             MetricsHttpServerOptions options = {});
  MetricsHttpServer(const MetricsHttpServer&) = delete;
  MetricsHttpServer& operator=(const MetricsHttpServer&) = delete;
  // Calls Stop().
  ~MetricsHttpServer();

  // Binds bind_host:port (SO_REUSEADDR), listens and starts the serving
  // thread. `bind_host` is a numeric address or a host name ("" means all
  // interfaces); port 0 lets the kernel pick a free port, which port() then
  // returns (the socket is bound once, so no other process can take the port
  // in between). Returns:
  //   InvalidArgument    port outside [0, 65535] or host that does not resolve
  //   Unavailable        host:port already in use, or another bind failure
  //   PermissionDenied   the port needs privileges
  //   ResourceExhausted  out of file descriptors
  //   FailedPrecondition already started
  absl::Status Start(const std::string& bind_host, int port);

  // The port bound by the last successful Start(); 0 before that.
  int port() const { return port_.load(); }

  // Stops serving: wakes and joins the thread and closes every socket,
  // promptly (it does not wait for clients). Idempotent; a stopped server may
  // be started again.
  void Stop();

 private:
  // Body of the serving thread; returns when Stop() signals wake_write_fd_.
  void ServeLoop();

  const MetricsRegistry* const registry_;
  const MetricsHttpServerOptions options_;
  // The fds below are set by Start() before the thread starts and closed by
  // Stop() after it is joined, so the thread reads them without a lock.
  int listen_fd_ = -1;
  int wake_read_fd_ = -1;  // Self-pipe: readable once Stop() has begun.
  int wake_write_fd_ = -1;
  std::atomic<int> port_{0};
  std::thread thread_;
};

}  // namespace petrel

#endif  // PETREL_BASE_METRICS_HTTP_SERVER_H_
