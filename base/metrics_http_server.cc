#include "base/metrics_http_server.h"

#include <atomic>
#include <chrono>
#include <cstring>
#include <exception>
#include <string_view>
#include <thread>
#include <vector>

#include <dlfcn.h>
#include <netdb.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

#include "CivetServer.h"
#include "civetweb.h"
#include "prometheus/collectable.h"
#include "prometheus/exposer.h"
#include "prometheus/metric_family.h"

// civetweb as Debian builds it (libcivetweb1) gives each of its threads a
// fixed stack of about 100 KiB (USE_STACK_SIZE at its build), and glibc
// refuses a thread whose stack cannot hold the process's static TLS. With
// CUDA compiled in, petrel-worker loads cuBLAS (about 110 KiB of TLS), so
// civetweb could not start a single thread there ("Cannot create threads")
// and the worker's /metrics endpoint failed. This definition in the
// executable interposes on the library's: any stack size asked for is raised
// to at least 1 MiB (virtual memory; only touched pages are resident).
extern "C" int pthread_attr_setstacksize(pthread_attr_t* attr,
                                         size_t stack_size) {
  using SetStackSize = int (*)(pthread_attr_t*, size_t);
  static const SetStackSize next = reinterpret_cast<SetStackSize>(
      dlsym(RTLD_NEXT, "pthread_attr_setstacksize"));
  constexpr size_t kMinStack = size_t{1} << 20;
  if (next == nullptr) return 0;  // keep the default stack size
  return next(attr, stack_size < kMinStack ? kMinStack : stack_size);
}

namespace petrel {
namespace {

// Presents a MetricsRegistry to the Exposer.
class RegistryCollectable : public prometheus::Collectable {
 public:
  explicit RegistryCollectable(const MetricsRegistry* registry)
      : registry_(registry) {}
  std::vector<prometheus::MetricFamily> Collect() const override {
    return registry_->Collect();
  }

 private:
  const MetricsRegistry* const registry_;
};

// The last message civetweb logged on this thread while starting: why a
// bind failed ("cannot bind to 127.0.0.1:80: 13 (Permission denied)").
thread_local std::string start_error;

int LogMessage(const mg_connection* conn, const char* message) {
  if (conn == nullptr) start_error = message;
  LOG_EVERY_N(WARNING, 100) << "metrics http server: " << message;
  return 1;  // logged; civetweb prints nothing itself
}

void Reply(mg_connection* conn, const char* status, const char* extra,
           const char* body, bool head) {
  mg_printf(conn,
            "HTTP/1.1 %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
            "Content-Length: %zu\r\n%sConnection: close\r\n\r\n%s",
            status, std::strlen(body), extra, head ? "" : body);
}

// Runs before civetweb looks for a handler: answers /healthz, refuses
// methods other than GET and HEAD (405) and paths other than /metrics
// (404; the Exposer's handler would take any path that starts with
// /metrics), and lets GET /metrics through to the Exposer. Returns the
// status code when it answered, 0 to pass the request on.
int BeginRequest(mg_connection* conn) {
  const mg_request_info* info = mg_get_request_info(conn);
  if (info == nullptr || info->local_uri == nullptr ||
      info->request_method == nullptr) {
    return 0;
  }
  const std::string_view method = info->request_method;
  const std::string_view path = info->local_uri;
  const bool head = method == "HEAD";
  if (method != "GET" && !head) {
    Reply(conn, "405 Method Not Allowed", "Allow: GET, HEAD\r\n",
          "method not allowed\n", false);
    return 405;
  }
  if (path == "/healthz") {
    Reply(conn, "200 OK", "", "ok", head);
    return 200;
  }
  if (path != "/metrics") {
    Reply(conn, "404 Not Found", "", "not found\n", head);
    return 404;
  }
  return 0;
}

// The numeric address civetweb wants for `host` ("" stays "": all
// interfaces); IPv6 in brackets.
absl::StatusOr<std::string> NumericHost(const std::string& host) {
  if (host.empty()) return std::string();
  addrinfo hints = {};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* addrs = nullptr;
  const int gai = getaddrinfo(host.c_str(), nullptr, &hints, &addrs);
  if (gai != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot resolve metrics http host ", host, ": ", gai_strerror(gai)));
  }
  char buf[NI_MAXHOST];
  const int ni = getnameinfo(addrs->ai_addr, addrs->ai_addrlen, buf,
                             sizeof(buf), nullptr, 0, NI_NUMERICHOST);
  const bool v6 = addrs->ai_family == AF_INET6;
  freeaddrinfo(addrs);
  if (ni != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot resolve metrics http host ", host));
  }
  return v6 ? absl::StrCat("[", buf, "]") : std::string(buf);
}

// Opens and closes a connection to host:port (numeric; "" is loopback).
void PokeListener(const std::string& host, int port) {
  std::string h = host.empty() ? "127.0.0.1" : host;
  if (h.size() > 2 && h.front() == '[') h = h.substr(1, h.size() - 2);
  addrinfo hints = {};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
  addrinfo* addrs = nullptr;
  if (getaddrinfo(h.c_str(), absl::StrCat(port).c_str(), &hints, &addrs) != 0) {
    return;
  }
  const int fd = socket(addrs->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd >= 0) {
    (void)connect(fd, addrs->ai_addr, addrs->ai_addrlen);
    close(fd);
  }
  freeaddrinfo(addrs);
}

}  // namespace

MetricsHttpServer::MetricsHttpServer(const MetricsRegistry* registry,
                                     MetricsHttpServerOptions options)
    : registry_(registry),
      options_(options),
      collectable_(std::make_shared<RegistryCollectable>(registry)) {
  CHECK(registry_ != nullptr);
}

MetricsHttpServer::~MetricsHttpServer() { Stop(); }

absl::Status MetricsHttpServer::Start(const std::string& bind_host, int port) {
  if (exposer_ != nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "metrics http server already started on port ", port_.load()));
  }
  if (port < 0 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics http port ", port, " is outside [0, 65535]"));
  }
  if (options_.num_threads < 1 || options_.num_threads > 4096) {
    return absl::InvalidArgumentError(absl::StrCat(
        "metrics http threads ", options_.num_threads, " not in 1..4096"));
  }
  const int64_t timeout_ms =
      absl::ToInt64Milliseconds(options_.request_timeout);
  if (timeout_ms < 1 || timeout_ms > 60000) {
    return absl::InvalidArgumentError(absl::StrCat(
        "metrics http request timeout ", timeout_ms, " ms not in 1..60000"));
  }
  absl::StatusOr<std::string> host = NumericHost(bind_host);
  if (!host.ok()) return host.status();
  const std::string where =
      host->empty() ? absl::StrCat(port) : absl::StrCat(*host, ":", port);
  std::vector<std::string> civet_options = {
      "listening_ports",    where,
      "num_threads",        absl::StrCat(options_.num_threads),
      "request_timeout_ms", absl::StrCat(timeout_ms),
      "enable_keep_alive",  "no",
      "max_request_size",   "8192",
      "linger_timeout_ms",  "0"};
  CivetCallbacks callbacks;
  callbacks.begin_request = &BeginRequest;
  callbacks.log_message = &LogMessage;
  start_error.clear();
  // prometheus-cpp and civetweb report a failed start by throwing; this is
  // the one place Petrel code meets those exceptions.
  try {
    exposer_ = std::make_unique<prometheus::Exposer>(civet_options, &callbacks);
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat(
        "cannot serve metrics on ", bind_host.empty() ? "*" : bind_host, ":",
        port, " (is the port in use?): ",
        start_error.empty() ? e.what() : start_error));
  }
  exposer_->RegisterCollectable(collectable_);
  bound_host_ = *host;
  const std::vector<int> ports = exposer_->GetListeningPorts();
  port_ = ports.empty() ? 0 : ports[0];
  LOG(INFO) << "metrics http server listening on "
            << (host->empty() ? "*" : *host) << ":" << port_.load() << " ("
            << options_.num_threads << " threads)";
  return absl::OkStatus();
}

void MetricsHttpServer::Stop() {
  if (exposer_ == nullptr) return;
  // civetweb's accepting thread notices a stop only when its poll() ends:
  // at a new connection or after 2 s. Connections from here end it at once
  // (each is accepted and dropped), so Stop takes milliseconds.
  std::atomic<bool> stopped{false};
  std::thread poker([this, &stopped] {
    while (!stopped.load()) {
      PokeListener(bound_host_, port_.load());
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
  exposer_.reset();
  stopped = true;
  poker.join();
  LOG(INFO) << "metrics http server on port " << port_.load() << " stopped";
}

}  // namespace petrel
