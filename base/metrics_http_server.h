// The HTTP endpoint that exposes a MetricsRegistry to Prometheus, built on
// prometheus-cpp's Exposer (civetweb underneath).
//
// It serves `GET /metrics` (every metric of the registry, text format
// 0.0.4; gzip when the scraper asks for it) and `GET /healthz` ("ok", for
// liveness probes); other paths get 404. civetweb serves each connection on
// one thread of a fixed pool, so the pool size bounds how many idle or slow
// clients can be served at once without delaying a scrape, and a request
// whose headers do not arrive within request_timeout is closed. Keep-alive
// is off: a scraper reconnects per scrape, which costs less than a thread
// held by an idle connection.

#ifndef PETREL_BASE_METRICS_HTTP_SERVER_H_
#define PETREL_BASE_METRICS_HTTP_SERVER_H_

#include <atomic>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"

#include "base/metrics.h"

namespace prometheus {
class Collectable;
class Exposer;
}  // namespace prometheus

namespace petrel {

struct MetricsHttpServerOptions {
  // Threads serving connections: how many clients (scrapers, or idle or
  // slow connections) are served at once; more wait in the accept queue.
  // Each costs a thread and about 48 KiB resident. Default 256 (200 slow
  // clients leave /metrics answering at once); range 1..4096.
  int num_threads = 256;
  // A connection whose request headers have not arrived this long after it
  // was accepted is closed. Default 2 s; range 1 ms .. 60 s.
  absl::Duration request_timeout = absl::Seconds(2);
};

// Serves one registry over HTTP on background threads.
//
// Thread safety: Start() and Stop() must be called from one owning thread;
// port() may be called from any thread. The registry is read from the
// server's threads, which is safe because MetricsRegistry is thread-safe.
class MetricsHttpServer {
 public:
  // `registry` is not owned and must outlive this server.
  // REQUIRES: registry != nullptr.
  explicit MetricsHttpServer(const MetricsRegistry* registry,
                             MetricsHttpServerOptions options = {});
  MetricsHttpServer(const MetricsHttpServer&) = delete;
  MetricsHttpServer& operator=(const MetricsHttpServer&) = delete;
  // Calls Stop().
  ~MetricsHttpServer();

  // Binds bind_host:port and starts serving. `bind_host` is a numeric
  // address or a host name ("" means all interfaces); port 0 lets the
  // kernel pick a free port, which port() then returns. Returns:
  //   InvalidArgument    port outside [0, 65535], a host that does not
  //                      resolve, or options out of range
  //   Unavailable        host:port in use or cannot be bound (the message
  //                      says which)
  //   FailedPrecondition already started
  absl::Status Start(const std::string& bind_host, int port);

  // The port bound by the last successful Start(); 0 before that.
  int port() const { return port_.load(); }

  // Stops serving and joins the threads. Idempotent; a stopped server may
  // be started again.
  void Stop();

 private:
  const MetricsRegistry* const registry_;
  const MetricsHttpServerOptions options_;
  // Hands the registry to the Exposer, which keeps a weak pointer to it.
  std::shared_ptr<prometheus::Collectable> collectable_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  std::string bound_host_;  // numeric, as civetweb was given it
  std::atomic<int> port_{0};
};

}  // namespace petrel

#endif  // PETREL_BASE_METRICS_HTTP_SERVER_H_
