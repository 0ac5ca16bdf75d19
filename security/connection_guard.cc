#include "security/connection_guard.h"

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>

#include <linux/tcp.h>  // struct tcp_info with tcpi_bytes_received
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <zmq.h>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

namespace petrel {
namespace {

constexpr int kEvents = ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_DISCONNECTED |
                        ZMQ_EVENT_CLOSED | ZMQ_EVENT_ACCEPT_FAILED |
                        ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
                        ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL;
// Members are checked every this many rounds (they are many and trusted).
constexpr int kMemberCheckEvery = 10;

// The socket behind `fd`, told apart from any earlier one on the same
// descriptor; 0 when `fd` is no socket (any more).
uint64_t SocketCookie(int fd) {
  uint64_t cookie = 0;
  socklen_t len = sizeof(cookie);
  if (getsockopt(fd, SOL_SOCKET, SO_COOKIE, &cookie, &len) != 0) return 0;
  return cookie;
}

// Bytes TCP received on `fd` so far, -1 when unknown.
int64_t BytesReceived(int fd) {
  tcp_info info;
  std::memset(&info, 0, sizeof(info));
  socklen_t len = sizeof(info);
  if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) return -1;
  if (len < offsetof(tcp_info, tcpi_bytes_received) +
                sizeof(info.tcpi_bytes_received)) {
    return -1;  // a kernel older than 4.1
  }
  return static_cast<int64_t>(info.tcpi_bytes_received);
}

}  // namespace

int FileDescriptorLimit() {
  rlimit limit;
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 1024;
  if (limit.rlim_cur == RLIM_INFINITY || limit.rlim_cur > (1u << 30)) {
    return 1 << 30;
  }
  return static_cast<int>(limit.rlim_cur);
}

int RaiseFileDescriptorLimit() {
  rlimit limit;
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 &&
      limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);  // at worst the limit stays as it was
  }
  return FileDescriptorLimit();
}

ConnectionGuard::ConnectionGuard(void* context, void* router,
                                 std::string monitor_endpoint,
                                 const PeerBudget& budget, int64_t member_bytes,
                                 MetricsRegistry* metrics)
    : context_(context),
      router_(router),
      endpoint_(std::move(monitor_endpoint)),
      budget_(budget),
      registry_(budget, member_bytes) {
  for (PeerRegistry::Reason reason : PeerRegistry::AllReasons()) {
    cut_[reason] = metrics->GetCounter(
        "petrel_van_connections_cut_total",
        "Incoming connections cut for breaking their memory budget, by "
        "reason.",
        {{"reason", PeerRegistry::ReasonName(reason)}});
  }
  non_members_ = metrics->GetGauge(
      "petrel_van_non_member_connections",
      "Incoming connections that are not (yet) members of the cluster.");
}

ConnectionGuard::~ConnectionGuard() { Stop(); }

absl::Status ConnectionGuard::Start() {
  // A quarter of the descriptors at most for peers that are not members.
  registry_.LimitNonMembers(std::max(16, FileDescriptorLimit() / 4));
  pair_ = zmq_socket(context_, ZMQ_PAIR);
  if (pair_ == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("cannot create a socket: ", zmq_strerror(errno)));
  }
  int zero = 0;
  // No high-water mark: a lost accept event would leave a connection
  // unguarded.
  zmq_setsockopt(pair_, ZMQ_RCVHWM, &zero, sizeof(zero));
  zmq_setsockopt(pair_, ZMQ_LINGER, &zero, sizeof(zero));
  if (zmq_socket_monitor(router_, endpoint_.c_str(), kEvents) != 0 ||
      zmq_connect(pair_, endpoint_.c_str()) != 0) {
    int err = errno;
    zmq_close(pair_);
    pair_ = nullptr;
    return absl::UnavailableError(absl::StrCat(
        "cannot monitor the port's connections: ", zmq_strerror(err)));
  }
  stop_ = false;
  thread_ = std::thread([this] { Run(); });
  return absl::OkStatus();
}

void ConnectionGuard::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  if (pair_ != nullptr) zmq_close(pair_);
  pair_ = nullptr;
}

void ConnectionGuard::Delivered(int fd, int64_t wire_bytes,
                                absl::FunctionRef<bool()> is_member) {
  if (registry_.Delivered(fd, wire_bytes, is_member)) return;
  // The message came before its connection's accept event was read.
  registry_.Accepted(fd, SocketCookie(fd));
  registry_.Delivered(fd, wire_bytes, is_member);
}

void ConnectionGuard::Run() {
  const long wait_ms = std::max<long>(
      1, static_cast<long>(absl::ToInt64Milliseconds(budget_.check_interval)));
  for (int round = 0; !stop_; ++round) {
    zmq_pollitem_t item = {pair_, 0, ZMQ_POLLIN, 0};
    zmq_poll(&item, 1, wait_ms);
    DrainEvents();
    CutOver(round % kMemberCheckEvery == 0);
  }
}

void ConnectionGuard::DrainEvents() {
  while (true) {
    // Two frames per event: uint16 event and uint32 value (the descriptor
    // for these events), then the endpoint.
    zmq_msg_t frame;
    zmq_msg_init(&frame);
    if (zmq_msg_recv(&frame, pair_, ZMQ_DONTWAIT) < 0) {
      zmq_msg_close(&frame);
      return;
    }
    uint16_t event = 0;
    uint32_t value = 0;
    if (zmq_msg_size(&frame) >= sizeof(event) + sizeof(value)) {
      const char* data = static_cast<const char*>(zmq_msg_data(&frame));
      std::memcpy(&event, data, sizeof(event));
      std::memcpy(&value, data + sizeof(event), sizeof(value));
    }
    bool more = zmq_msg_more(&frame);
    zmq_msg_close(&frame);
    while (more) {
      zmq_msg_init(&frame);
      more = zmq_msg_recv(&frame, pair_, ZMQ_DONTWAIT) >= 0 &&
             zmq_msg_more(&frame);
      zmq_msg_close(&frame);
    }
    const int fd = static_cast<int>(value);
    if (event == ZMQ_EVENT_ACCEPTED) {
      registry_.Accepted(fd, SocketCookie(fd));
    } else if (event == ZMQ_EVENT_DISCONNECTED) {
      registry_.Closed(fd);
    } else if (event == ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL ||
               event == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL) {
      if (on_handshake_failed_) on_handshake_failed_();
    } else if (event == ZMQ_EVENT_ACCEPT_FAILED) {
      LOG_EVERY_T(WARNING, 1.0)
          << "cannot accept a connection: " << zmq_strerror(value)
          << " (non-member connections: " << registry_.non_members() << ")";
    }
  }
}

void ConnectionGuard::CutOver(bool include_members) {
  std::vector<PeerRegistry::Cut> cuts =
      registry_.Check(&BytesReceived, include_members);
  for (const PeerRegistry::Cut& cut : cuts) {
    // The descriptor may already hold another connection whose accept event
    // is still queued: cut only the connection the registry meant.
    if (cut.cookie == 0 || SocketCookie(cut.fd) != cut.cookie) continue;
    // ZeroMQ sees the connection end, drops it and frees its buffers; the
    // descriptor stays ZeroMQ's to close.
    shutdown(cut.fd, SHUT_RDWR);
    cut_[cut.reason]->Increment();
    LOG_EVERY_T(WARNING, 1.0)
        << "cut an incoming connection holding " << cut.in_flight << " bytes ("
        << PeerRegistry::ReasonName(cut.reason) << ")";
  }
  non_members_->Set(registry_.non_members());
}

}  // namespace petrel
