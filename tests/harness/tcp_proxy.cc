#include "tests/harness/tcp_proxy.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"

namespace petrel {
namespace {

sockaddr_in Loopback(int port) {
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return addr;
}

void SetNonBlocking(int fd) {
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

// One forwarded connection: two sockets, and per direction the bytes read
// from one side not yet written to the other.
struct Link {
  int fd[2] = {-1, -1};    // 0: the accepted client, 1: the target
  std::string pending[2];  // pending[i]: read from fd[i], for fd[1 - i]
  // The last pattern size - 1 bytes read from fd[i], so that a watched
  // pattern split between two reads is still found.
  std::string tail[2];
  bool dead = false;
};

// Counts the occurrences of `pattern` in what fd[from] sent, `chunk` being
// its latest bytes.
int64_t CountPattern(Link& link, int from, const std::string& pattern,
                     const char* chunk, size_t n) {
  if (pattern.empty()) return 0;
  std::string window = link.tail[from];
  window.append(chunk, n);
  int64_t hits = 0;
  for (size_t at = window.find(pattern); at != std::string::npos;
       at = window.find(pattern, at + 1)) {
    ++hits;
  }
  const size_t keep = std::min(window.size(), pattern.size() - 1);
  link.tail[from] = window.substr(window.size() - keep);
  return hits;
}

void Close(Link& link) {
  for (int& fd : link.fd) {
    if (fd >= 0) close(fd);
    fd = -1;
  }
  link.dead = true;
}

// Reads what fd[from] has and writes what it can to the other side.
void Pump(Link& link, int from, std::atomic<int64_t>* bytes,
          const std::string& pattern, std::atomic<int64_t>* hits) {
  char buf[65536];
  while (true) {
    ssize_t n = read(link.fd[from], buf, sizeof(buf));
    if (n > 0) {
      link.pending[from].append(buf, static_cast<size_t>(n));
      *bytes += n;
      *hits += CountPattern(link, from, pattern, buf, static_cast<size_t>(n));
      continue;
    }
    if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
      Close(link);  // one side closed: close the other, as a cut
      return;
    }
    break;
  }
}

void Flush(Link& link, int from, bool hold) {
  if (link.dead || hold) return;
  std::string& out = link.pending[from];
  while (!out.empty()) {
    ssize_t n = write(link.fd[1 - from], out.data(), out.size());
    if (n > 0) {
      out.erase(0, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    Close(link);
    return;
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<TcpProxy>> TcpProxy::Start() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return absl::UnavailableError("socket() failed");
  sockaddr_in addr = Loopback(0);
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(fd, 128) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    close(fd);
    return absl::UnavailableError(
        absl::StrCat("cannot listen on loopback: ", strerror(errno)));
  }
  int wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake < 0) {
    close(fd);
    return absl::UnavailableError("eventfd() failed");
  }
  std::unique_ptr<TcpProxy> proxy(new TcpProxy(fd, ntohs(addr.sin_port), wake));
  proxy->thread_ = std::thread([p = proxy.get()] { p->Loop(); });
  return proxy;
}

TcpProxy::TcpProxy(int listen_fd, int port, int wake_fd)
    : listen_fd_(listen_fd), port_(port), wake_fd_(wake_fd) {}

TcpProxy::~TcpProxy() {
  stop_ = true;
  Wake();
  thread_.join();
  close(listen_fd_);
  close(wake_fd_);
}

void TcpProxy::Wake() {
  uint64_t one = 1;
  ssize_t n = write(wake_fd_, &one, sizeof(one));
  (void)n;
}

void TcpProxy::set_target(int port) {
  target_ = port;
  Wake();
}

void TcpProxy::Watch(const std::string& pattern) {
  absl::MutexLock lock(&mu_);
  pattern_ = pattern;
}

void TcpProxy::set_hold(bool hold) {
  hold_ = hold;
  Wake();
}

void TcpProxy::CutAll() {
  absl::MutexLock lock(&mu_);
  const uint64_t mine = ++cut_requested_;
  Wake();
  auto done = [this, mine]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return cut_done_ >= mine || stop_.load();
  };
  mu_.Await(absl::Condition(&done));
}

void TcpProxy::Loop() {
  std::vector<Link> links;
  while (!stop_) {
    const bool hold = hold_;
    std::string pattern;
    {
      absl::MutexLock lock(&mu_);
      pattern = pattern_;
    }
    std::vector<pollfd> fds = {{wake_fd_, POLLIN, 0}};
    if (target_ > 0) fds.push_back({listen_fd_, POLLIN, 0});
    const size_t first_link = fds.size();
    for (const Link& l : links) {
      for (int side = 0; side < 2; ++side) {
        short events = POLLIN;
        if (!hold && !l.pending[1 - side].empty()) events |= POLLOUT;
        fds.push_back({l.fd[side], events, 0});
      }
    }
    if (poll(fds.data(), fds.size(), 100) < 0 && errno != EINTR) break;
    if (fds[0].revents & POLLIN) {
      uint64_t count;
      ssize_t n = read(wake_fd_, &count, sizeof(count));
      (void)n;
    }
    for (size_t i = 0; i < links.size(); ++i) {
      for (int side = 0; side < 2 && !links[i].dead; ++side) {
        const short ev = fds[first_link + 2 * i + side].revents;
        if (ev & (POLLIN | POLLHUP | POLLERR)) {
          Pump(links[i], side, &bytes_, pattern, &pattern_hits_);
        }
      }
      // hold_ itself, not `hold`: bytes read after set_hold(true) returned
      // must stay.
      for (int side = 0; side < 2; ++side) Flush(links[i], side, hold_);
    }
    uint64_t cut = 0;
    bool cutting = false;
    {
      absl::MutexLock lock(&mu_);
      cut = cut_requested_;
      cutting = cut_done_ < cut;
    }
    if (cutting) {
      for (Link& l : links) Close(l);
      ++cuts_;
    }
    links.erase(std::remove_if(links.begin(), links.end(),
                               [](const Link& l) { return l.dead; }),
                links.end());
    if (cutting) {
      absl::MutexLock lock(&mu_);
      cut_done_ = cut;
    }
    if (target_ > 0 && fds.size() > 1 && (fds[1].revents & POLLIN)) {
      while (true) {
        int client =
            accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (client < 0) break;
        int upstream = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in addr = Loopback(target_);
        if (upstream < 0 ||
            connect(upstream, reinterpret_cast<sockaddr*>(&addr),
                    sizeof(addr)) != 0) {
          if (upstream >= 0) close(upstream);
          close(client);  // the target is down: refuse, as it would
          continue;
        }
        SetNonBlocking(client);
        SetNonBlocking(upstream);
        Link link;
        link.fd[0] = client;
        link.fd[1] = upstream;
        links.push_back(std::move(link));
        ++connections_;
      }
    }
  }
  for (Link& l : links) Close(l);
  absl::MutexLock lock(&mu_);
  cut_done_ = cut_requested_;
}

}  // namespace petrel
