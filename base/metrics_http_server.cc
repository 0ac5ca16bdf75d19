#include "base/metrics_http_server.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <string_view>
#include <vector>

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "glog/logging.h"

namespace petrel {
namespace {

using Clock = std::chrono::steady_clock;

// Pause before retrying accept() after running out of fds or memory, so a
// listen socket that stays readable does not make the loop spin.
constexpr std::chrono::milliseconds kAcceptBackoff{100};
// Most bytes discarded per wakeup while draining a connection after the
// reply, so one fast sender cannot monopolise the thread.
constexpr size_t kMaxDrainBytesPerWakeup = 64 * 1024;

enum class Phase { kReading, kWriting, kDraining };

struct Connection {
  int fd = -1;
  Clock::time_point deadline;
  Phase phase = Phase::kReading;
  std::string in;   // Request bytes read so far.
  std::string out;  // The reply, once known.
  size_t sent = 0;  // Bytes of `out` already sent.
};

std::string HostPort(const std::string& host, int port) {
  if (host.find(':') != std::string::npos) {
    return absl::StrCat("[", host, "]:", port);
  }
  return absl::StrCat(host.empty() ? "*" : host, ":", port);
}

void CloseFd(int* fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

constexpr char kTextPlain[] = "text/plain; charset=utf-8";

// Builds a whole reply; `status` is the code and reason ("404 Not Found").
// Abseil's Debian build has its own absl::string_view (not std::string_view),
// which is what absl::StrCat accepts, hence the absl type here.
std::string Reply(absl::string_view status, absl::string_view body,
                  absl::string_view content_type = kTextPlain,
                  bool head_only = false) {
  return absl::StrCat(
      "HTTP/1.1 ", status, "\r\nContent-Type: ", content_type,
      "\r\nContent-Length: ", body.size(),
      absl::StartsWith(status, "405") ? "\r\nAllow: GET, HEAD" : "",
      "\r\nConnection: close\r\n\r\n", head_only ? absl::string_view() : body);
}

struct RequestLine {
  std::string_view method;
  std::string_view path;  // The target without its query string.
};

// Parses "METHOD SP /target SP HTTP/1.x" (the trailing CR already removed).
std::optional<RequestLine> ParseRequestLine(std::string_view line) {
  const size_t sp1 = line.find(' ');
  if (sp1 == std::string_view::npos) return std::nullopt;
  const size_t sp2 = line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos) return std::nullopt;
  RequestLine req;
  req.method = line.substr(0, sp1);
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string_view version = line.substr(sp2 + 1);
  if (req.method.empty() || (version != "HTTP/1.0" && version != "HTTP/1.1") ||
      target.empty() || target[0] != '/') {
    return std::nullopt;
  }
  for (char c : req.method) {
    if (c < 'A' || c > 'Z') return std::nullopt;
  }
  for (unsigned char c : target) {
    if (c <= ' ' || c == 0x7f) return std::nullopt;
  }
  req.path = target.substr(0, target.find('?'));
  return req;
}

// Returns the reply to the request in `in`, or nullopt while the request is
// still incomplete and shorter than max_bytes.
std::optional<std::string> ReplyFor(std::string_view in, size_t max_bytes,
                                    const MetricsRegistry& registry) {
  const size_t eol = in.find('\n');
  if (eol == std::string_view::npos) {
    if (in.size() >= max_bytes) {
      return Reply("400 Bad Request", "request line too long\n");
    }
    return std::nullopt;
  }
  std::string_view line = in.substr(0, eol);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  std::optional<RequestLine> req = ParseRequestLine(line);
  if (!req.has_value())
    return Reply("400 Bad Request", "malformed request line\n");
  // The headers end at the first empty line; they are not needed otherwise.
  if (in.find("\n\r\n", eol) == std::string_view::npos &&
      in.find("\n\n", eol) == std::string_view::npos) {
    if (in.size() >= max_bytes) {
      return Reply("400 Bad Request", "request headers too long\n");
    }
    return std::nullopt;
  }
  const bool head = req->method == "HEAD";
  if (req->method != "GET" && !head) {
    return Reply("405 Method Not Allowed", "method not allowed\n");
  }
  if (req->path == "/metrics") {
    return Reply("200 OK", registry.RenderPrometheus(),
                 "text/plain; version=0.0.4; charset=utf-8", head);
  }
  if (req->path == "/healthz") return Reply("200 OK", "ok", kTextPlain, head);
  return Reply("404 Not Found", "not found\n");
}

// I/O steps: each returns false to close the connection now, true to poll on.

bool Drain(Connection* c) {
  char buf[4096];
  for (size_t total = 0; total < kMaxDrainBytesPerWakeup;) {
    const ssize_t n = recv(c->fd, buf, sizeof(buf), 0);
    if (n > 0) {
      total += n;
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    }
  }
  return true;
}

bool WriteReply(Connection* c) {
  while (c->sent < c->out.size()) {
    const ssize_t n = send(c->fd, c->out.data() + c->sent,
                           c->out.size() - c->sent, MSG_NOSIGNAL);
    if (n > 0) {
      c->sent += n;
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    }
  }
  // Half-close and read until the client closes, so that unread request
  // bytes do not make the kernel reset the connection and discard the reply
  // before the client has read it.
  shutdown(c->fd, SHUT_WR);
  c->phase = Phase::kDraining;
  std::string().swap(c->in);  // Frees both buffers while draining.
  std::string().swap(c->out);
  return Drain(c);
}

bool ReadRequest(Connection* c, size_t max_bytes,
                 const MetricsRegistry& registry) {
  char buf[4096];
  bool open = true;
  while (c->in.size() < max_bytes) {
    const size_t want = std::min(sizeof(buf), max_bytes - c->in.size());
    const ssize_t n = recv(c->fd, buf, want, 0);
    if (n > 0) {
      c->in.append(buf, n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      open = n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
      break;
    }
  }
  // A client may half-close after sending its request, so look for a
  // complete request even when the read ended in EOF.
  std::optional<std::string> reply = ReplyFor(c->in, max_bytes, registry);
  if (!reply.has_value()) return open;
  c->out = std::move(*reply);
  c->phase = Phase::kWriting;
  return WriteReply(c);
}

bool Service(Connection* c, size_t max_bytes, const MetricsRegistry& registry) {
  if (c->phase == Phase::kReading) return ReadRequest(c, max_bytes, registry);
  return c->phase == Phase::kWriting ? WriteReply(c) : Drain(c);
}

// Milliseconds until `t` (0 once past), rounded up so poll() won't wake early.
int MillisUntil(Clock::time_point t, Clock::time_point now) {
  if (t <= now) return 0;
  auto ms = std::chrono::ceil<std::chrono::milliseconds>(t - now).count();
  return static_cast<int>(std::min<int64_t>(ms, 60 * 1000));
}

// Opens a non-blocking socket listening on host:port (SO_REUSEADDR), trying
// each address the host resolves to. Returns the fd or the Status that
// MetricsHttpServer::Start documents.
absl::StatusOr<int> OpenListener(const std::string& host, int port) {
  const std::string where = HostPort(host, port);
  addrinfo hints = {};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* addrs = nullptr;
  const int gai = getaddrinfo(host.empty() ? nullptr : host.c_str(),
                              absl::StrCat(port).c_str(), &hints, &addrs);
  if (gai != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot resolve metrics http host ", where, ": ", gai_strerror(gai)));
  }
  int fd = -1;
  int err = 0;
  for (addrinfo* ai = addrs; ai != nullptr && fd < 0; ai = ai->ai_next) {
    fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                0);
    const int one = 1;
    if (fd < 0 ||
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
        bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 ||
        listen(fd, SOMAXCONN) != 0) {
      err = errno;
      CloseFd(&fd);
    }
  }
  freeaddrinfo(addrs);
  if (fd >= 0) return fd;
  if (err == EADDRINUSE) {
    return absl::UnavailableError(
        absl::StrCat("metrics http port ", where, " is already in use"));
  }
  const std::string message = absl::StrCat(
      "cannot listen on metrics http address ", where, ": ", strerror(err));
  if (err == EACCES) return absl::PermissionDeniedError(message);
  if (err == EMFILE || err == ENFILE) {
    return absl::ResourceExhaustedError(message);
  }
  return absl::UnavailableError(message);
}

// Returns the local port of a bound socket, or -1.
int BoundPort(int fd) {
  sockaddr_storage addr = {};
  socklen_t len = sizeof(addr);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return -1;
  }
  return ntohs(addr.ss_family == AF_INET6
                   ? reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port
                   : reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
}

// Accepts pending connections, each with the given deadline, until `conns`
// holds max_connections or none are pending. Returns false when accept ran
// out of fds or memory, so the caller should pause accepting for a while.
bool AcceptPending(int listen_fd, size_t max_connections,
                   Clock::time_point deadline, std::vector<Connection>* conns) {
  while (conns->size() < max_connections) {
    const int fd =
        accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      conns->emplace_back();
      conns->back().fd = fd;
      conns->back().deadline = deadline;
    } else if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
               errno == ENOMEM) {
      PLOG_EVERY_N(WARNING, 100) << "metrics http server: accept failed";
      return false;
    } else if (errno != EINTR && errno != ECONNABORTED) {
      return true;  // EAGAIN: nothing more is pending.
    }
  }
  return true;
}

}  // namespace

MetricsHttpServer::MetricsHttpServer(const MetricsRegistry* registry,
                                     MetricsHttpServerOptions options)
    : registry_(registry), options_(options) {
  CHECK(registry_ != nullptr);
  CHECK_GE(options_.max_request_bytes, 64u);
  CHECK(options_.connection_timeout > absl::ZeroDuration());
  CHECK_GE(options_.max_connections, 1);
}

MetricsHttpServer::~MetricsHttpServer() { Stop(); }

absl::Status MetricsHttpServer::Start(const std::string& bind_host, int port) {
  if (thread_.joinable()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "metrics http server already started on port ", port_.load()));
  }
  if (port < 0 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics http port ", port, " is outside [0, 65535]"));
  }
  absl::StatusOr<int> listen_fd = OpenListener(bind_host, port);
  if (!listen_fd.ok()) return listen_fd.status();
  listen_fd_ = *listen_fd;
  const int bound_port = BoundPort(listen_fd_);
  int fds[2];
  if (bound_port < 0 || pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) {
    const int err = errno;
    CloseFd(&listen_fd_);
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot start metrics http server on ",
                     HostPort(bind_host, port), ": ", strerror(err)));
  }
  wake_read_fd_ = fds[0];
  wake_write_fd_ = fds[1];
  port_ = bound_port;
  thread_ = std::thread(&MetricsHttpServer::ServeLoop, this);
  LOG(INFO) << "metrics http server listening on "
            << HostPort(bind_host, bound_port);
  return absl::OkStatus();
}

void MetricsHttpServer::Stop() {
  if (!thread_.joinable()) return;
  const char byte = 0;
  // The pipe is empty until now, so this write cannot block or fail short.
  while (write(wake_write_fd_, &byte, 1) < 0 && errno == EINTR) {
  }
  thread_.join();
  CloseFd(&listen_fd_);
  CloseFd(&wake_read_fd_);
  CloseFd(&wake_write_fd_);
  LOG(INFO) << "metrics http server on port " << port_.load() << " stopped";
}

void MetricsHttpServer::ServeLoop() {
  const auto timeout = absl::ToChronoMilliseconds(options_.connection_timeout);
  const size_t max_connections = options_.max_connections;
  std::vector<Connection> conns;
  std::vector<pollfd> fds;
  Clock::time_point accept_paused_until;
  while (true) {
    Clock::time_point now = Clock::now();
    const bool paused = now < accept_paused_until;
    const bool accepting = conns.size() < max_connections && !paused;
    fds.clear();
    fds.push_back({wake_read_fd_, POLLIN, 0});
    // poll() ignores entries with a negative fd.
    fds.push_back({accepting ? listen_fd_ : -1, POLLIN, 0});
    // Sleep until the first deadline, or the end of an accept pause.
    int timeout_ms = paused ? MillisUntil(accept_paused_until, now) : -1;
    for (const Connection& c : conns) {
      const short events = c.phase == Phase::kWriting ? POLLOUT : POLLIN;
      fds.push_back({c.fd, events, 0});
      const int ms = MillisUntil(c.deadline, now);
      timeout_ms = timeout_ms < 0 ? ms : std::min(timeout_ms, ms);
    }
    if (poll(fds.data(), fds.size(), timeout_ms) < 0) {
      if (errno != EINTR) {
        PLOG_EVERY_N(ERROR, 100) << "metrics http server: poll failed";
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      continue;
    }
    if (fds[0].revents != 0) break;  // Stop() was called.
    now = Clock::now();
    for (size_t i = 0; i < conns.size(); ++i) {
      Connection& c = conns[i];
      if ((fds[i + 2].revents != 0 &&
           !Service(&c, options_.max_request_bytes, *registry_)) ||
          now >= c.deadline) {
        CloseFd(&c.fd);
      }
    }
    conns.erase(std::remove_if(conns.begin(), conns.end(),
                               [](const Connection& c) { return c.fd < 0; }),
                conns.end());
    if ((fds[1].revents & POLLIN) &&
        !AcceptPending(listen_fd_, max_connections, now + timeout, &conns)) {
      accept_paused_until = now + kAcceptBackoff;
    }
  }
  for (Connection& c : conns) CloseFd(&c.fd);
}

}  // namespace petrel
