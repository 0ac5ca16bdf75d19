#include "tests/harness/hostile_peer.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zmq.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "glog/logging.h"

namespace petrel {
namespace {

absl::Status ZmqError(const std::string& what) {
  return absl::UnavailableError(absl::StrCat(what, ": ", zmq_strerror(errno)));
}

void NoFree(void* /*data*/, void* /*hint*/) {}

}  // namespace

RawDealer::RawDealer(int port, const std::string& routing_id,
                     const CurveKeyPair* curve, const std::string& server_key)
    : context_(zmq_ctx_new()), socket_(zmq_socket(context_, ZMQ_DEALER)) {
  int zero = 0;
  zmq_setsockopt(socket_, ZMQ_LINGER, &zero, sizeof(zero));
  zmq_setsockopt(socket_, ZMQ_SNDHWM, &zero, sizeof(zero));
  if (!routing_id.empty()) {
    zmq_setsockopt(socket_, ZMQ_ROUTING_ID, routing_id.data(),
                   routing_id.size());
  }
  if (curve != nullptr) {
    absl::Status s = ConfigureCurveClient(socket_, *curve, server_key);
    if (!s.ok()) LOG(ERROR) << "RawDealer: " << s;
  }
  std::string endpoint = absl::StrCat("tcp://127.0.0.1:", port);
  zmq_connect(socket_, endpoint.c_str());
}

RawDealer::~RawDealer() {
  zmq_close(socket_);
  zmq_ctx_term(context_);  // linger 0: returns at once
  for (size_t i = 0; i < large_.size(); ++i) munmap(large_[i], large_sizes_[i]);
}

absl::Status RawDealer::Send(const std::vector<std::string>& frames) {
  for (size_t i = 0; i < frames.size(); ++i) {
    int more = i + 1 < frames.size() ? ZMQ_SNDMORE : 0;
    if (zmq_send(socket_, frames[i].data(), frames[i].size(), more) < 0) {
      return ZmqError("send");
    }
  }
  return absl::OkStatus();
}

absl::Status RawDealer::SendLarge(const std::string& head, int count,
                                  size_t frame_bytes) {
  // Untouched anonymous pages read as zeros without becoming resident.
  void* p = mmap(nullptr, frame_bytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return absl::ResourceExhaustedError("mmap");
  large_.push_back(static_cast<char*>(p));
  large_sizes_.push_back(frame_bytes);
  if (zmq_send(socket_, head.data(), head.size(), count > 0 ? ZMQ_SNDMORE : 0) <
      0) {
    return ZmqError("send");
  }
  for (int i = 0; i < count; ++i) {
    zmq_msg_t m;
    zmq_msg_init_data(&m, p, frame_bytes, NoFree, nullptr);
    if (zmq_msg_send(&m, socket_, i + 1 < count ? ZMQ_SNDMORE : 0) < 0) {
      zmq_msg_close(&m);
      return ZmqError("send");
    }
  }
  return absl::OkStatus();
}

ConnectionCounter::ConnectionCounter()
    : context_(zmq_ctx_new()), router_(zmq_socket(context_, ZMQ_ROUTER)) {
  int zero = 0;
  zmq_setsockopt(router_, ZMQ_LINGER, &zero, sizeof(zero));
  zmq_bind(router_, "tcp://127.0.0.1:*");
  char last[256];
  size_t len = sizeof(last);
  zmq_getsockopt(router_, ZMQ_LAST_ENDPOINT, last, &len);
  std::string endpoint(last);
  if (!absl::SimpleAtoi(endpoint.substr(endpoint.rfind(':') + 1), &port_)) {
    port_ = 0;  // not bound: the test's own connections will fail
  }
  std::string monitor = absl::StrCat("inproc://connection-counter-",
                                     reinterpret_cast<uintptr_t>(this));
  zmq_socket_monitor(router_, monitor.c_str(), ZMQ_EVENT_ACCEPTED);
  monitor_ = zmq_socket(context_, ZMQ_PAIR);
  zmq_setsockopt(monitor_, ZMQ_LINGER, &zero, sizeof(zero));
  zmq_connect(monitor_, monitor.c_str());
}

ConnectionCounter::~ConnectionCounter() {
  zmq_close(monitor_);
  zmq_close(router_);
  zmq_ctx_term(context_);
}

int ConnectionCounter::Accepted() {
  while (true) {
    zmq_msg_t frame;
    zmq_msg_init(&frame);
    if (zmq_msg_recv(&frame, monitor_, ZMQ_DONTWAIT) < 0) {
      zmq_msg_close(&frame);
      return accepted_;
    }
    // The event frame, then the endpoint frame.
    if (zmq_msg_more(&frame)) ++accepted_;
    zmq_msg_close(&frame);
  }
}

absl::StatusOr<std::vector<int>> OpenIdleConnections(int port, int count) {
  std::vector<int> fds;
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (int i = 0; i < count; ++i) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
      CloseAll(&fds);
      return absl::ResourceExhaustedError(
          absl::StrCat("socket: ", std::strerror(errno)));
    }
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 &&
        errno != EINPROGRESS) {
      int err = errno;
      close(fd);
      CloseAll(&fds);
      return absl::UnavailableError(
          absl::StrCat("connect: ", std::strerror(err)));
    }
    fds.push_back(fd);
  }
  return fds;
}

void CloseAll(std::vector<int>* fds) {
  for (int fd : *fds) close(fd);
  fds->clear();
}

namespace {

absl::StatusOr<int64_t> StatusBytes(pid_t pid, absl::string_view field) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(in, line)) {
    absl::string_view rest = line;
    if (!absl::ConsumePrefix(&rest, field)) continue;
    rest = absl::StripAsciiWhitespace(rest);
    int64_t kib = 0;
    if (!absl::ConsumeSuffix(&rest, " kB") || !absl::SimpleAtoi(rest, &kib)) {
      return absl::InternalError(absl::StrCat("cannot read '", line, "'"));
    }
    return kib * 1024;
  }
  return absl::NotFoundError(absl::StrCat("no ", field, " for process ", pid));
}

}  // namespace

absl::StatusOr<int64_t> ResidentBytes(pid_t pid) {
  return StatusBytes(pid, "VmRSS:");
}

absl::StatusOr<int64_t> PeakResidentBytes(pid_t pid) {
  return StatusBytes(pid, "VmHWM:");
}

}  // namespace petrel
