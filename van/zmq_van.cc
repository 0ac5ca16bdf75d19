#include "van/zmq_van.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>
#include <zmq.h>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "glog/logging.h"

#include "base/cpu_affinity.h"
#include "base/status_macros.h"
#include "van/frame_split.h"

namespace petrel {
namespace {

constexpr int kMaxReceivesPerWake = 256;
// After a borrower with no request pending gave the ROUTER back, the I/O
// thread takes it within this time (unless another borrower came).
constexpr absl::Duration kLazyResume = absl::Milliseconds(1);
// Longest wait of ReceiveUntil between looks at its condition.
constexpr absl::Duration kReceiveSlice = absl::Milliseconds(100);

absl::Status ZmqError(absl::string_view what) {
  return absl::UnavailableError(absl::StrCat(what, ": ", zmq_strerror(errno)));
}

std::atomic<uint64_t> next_van_instance{1};

// Each thread's sockets per van instance; weak, so a stopped van's go.
thread_local absl::flat_hash_map<uint64_t, std::weak_ptr<ZmqThreadSockets>>
    this_thread_sockets;

// Data bytes of a message's frames (all but the header and, in a split
// message, its layout).
size_t DataBytes(const std::vector<Buffer>& frames) {
  const size_t first = !frames.empty() && IsSplitHeader(frames[0]) ? 2 : 1;
  size_t bytes = 0;
  for (size_t i = first; i < frames.size(); ++i) bytes += frames[i].size();
  return bytes;
}

void SetIntOption(void* socket, int option, int value) {
  // Only fails for a bad option or a closed socket: our own bug.
  CHECK_EQ(zmq_setsockopt(socket, option, &value, sizeof(value)), 0)
      << zmq_strerror(errno);
}

}  // namespace

ZmqVan::ZmqVan(VanOptions options, MetricsRegistry* metrics)
    : Van(std::move(options), metrics), instance_(next_van_instance++) {}

ZmqVan::~ZmqVan() { Stop(); }

absl::Status ZmqVan::OpenRouter() {
  context_ = zmq_ctx_new();
  if (context_ == nullptr) return ZmqError("cannot create a ZeroMQ context");
  zmq_ctx_set(context_, ZMQ_MAX_SOCKETS, 65536);
  // Before the first socket, which starts ZeroMQ's I/O thread.
  if (options().io_cpu >= 0 &&
      zmq_ctx_set(context_, ZMQ_THREAD_AFFINITY_CPU_ADD, options().io_cpu)) {
    return ZmqError("cannot set ZMQ_THREAD_AFFINITY_CPU_ADD");
  }
  router_ = zmq_socket(context_, ZMQ_ROUTER);
  if (router_ == nullptr) return ZmqError("cannot create a socket");
  SetIntOption(router_, ZMQ_LINGER, 0);
  SetIntOption(router_, ZMQ_RCVHWM, 0);
  int64_t max_bytes = options().limits.max_message_bytes;
  if (zmq_setsockopt(router_, ZMQ_MAXMSGSIZE, &max_bytes, sizeof(max_bytes))) {
    return ZmqError("cannot set ZMQ_MAXMSGSIZE");
  }
  if (absl::Status s = SetUpSecurity(); !s.ok()) {
    CloseSockets();
    return s;
  }
  // A connection that does not finish the handshake in time is dropped
  // (ZeroMQ's default is 30 s, long enough for idle connections to hold
  // every descriptor).
  SetIntOption(
      router_, ZMQ_HANDSHAKE_IVL,
      static_cast<int>(std::max<int64_t>(
          1, absl::ToInt64Milliseconds(options().peers.handshake_timeout))));
  return absl::OkStatus();
}

absl::Status ZmqVan::BindRouter() {
  std::string endpoint =
      options().port == 0
          ? absl::StrCat("tcp://", options().bind_host, ":*")
          : absl::StrCat("tcp://", options().bind_host, ":", options().port);
  if (zmq_bind(router_, endpoint.c_str()) != 0) {
    int err = errno;
    CloseSockets();
    if (err == EADDRINUSE) {
      return absl::UnavailableError(absl::StrCat(
          "port ", options().port, " on ", options().bind_host,
          " is already in use; choose another --port or 0 for a free one"));
    }
    return absl::UnavailableError(
        absl::StrCat("cannot bind ", endpoint, ": ", zmq_strerror(err)));
  }
  char last[256];
  size_t last_len = sizeof(last);
  zmq_getsockopt(router_, ZMQ_LAST_ENDPOINT, last, &last_len);
  absl::string_view bound(last);
  int port = 0;
  if (!absl::SimpleAtoi(bound.substr(bound.rfind(':') + 1), &port)) {
    return absl::InternalError(absl::StrCat("cannot parse endpoint ", bound));
  }
  port_ = port;
  return absl::OkStatus();
}

absl::Status ZmqVan::StartGuard() {
  const PeerBudget& budget = options().peers;
  const int64_t member_bytes =
      budget.member_bytes > 0
          ? budget.member_bytes
          : options().limits.max_message_bytes + (int64_t{1} << 20);
  guard_ = std::make_unique<ConnectionGuard>(
      context_, router_, absl::StrCat("inproc://petrel-guard-", instance_),
      budget, member_bytes, metrics());
  if (zap_ != nullptr) {
    guard_->set_on_handshake_failed(
        [zap = zap_.get()] { zap->CountHandshakeFailed(); });
  }
  if (absl::Status s = guard_->Start(); !s.ok()) {
    CloseSockets();
    return s;
  }
  return absl::OkStatus();
}

absl::Status ZmqVan::Start(MessageHandler on_message, TickHandler on_tick) {
  on_message_ = std::move(on_message);
  on_tick_ = std::move(on_tick);
  if (options().io_cpu >= 0) {
    if (absl::Status s = CheckCpuAllowed(options().io_cpu); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("io_cpu: ", s.message()));
    }
  }
  PETREL_RETURN_IF_ERROR(OpenRouter());
  PETREL_RETURN_IF_ERROR(BindRouter());
  PETREL_RETURN_IF_ERROR(StartGuard());
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  stop_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  resume_fd_ = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (wake_fd_ < 0 || stop_fd_ < 0 || resume_fd_ < 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot create an eventfd or timerfd: ", strerror(errno)));
  }
  if (on_connection_lost_) {
    watch_ = std::make_unique<ConnectionWatch>(watch_grace_);
  }
  stop_ = false;
  running_ = true;
  {
    absl::MutexLock lock(&direct_mu_);
    direct_open_ = true;
  }
  io_thread_ = std::thread([this] { IoLoop(); });
  if (options().io_cpu >= 0) {
    absl::Status s = PinThread(io_thread_.native_handle(), options().io_cpu);
    if (!s.ok()) LOG(WARNING) << "van I/O thread: " << s;
  }
  return absl::OkStatus();
}

absl::Status ZmqVan::SetUpSecurity() {
  const CurveOptions& curve = options().curve;
  if (!curve.enabled()) return absl::OkStatus();
  if (!zmq_has("curve")) {
    return absl::FailedPreconditionError(
        "CURVE keys are configured but this ZeroMQ was built without CURVE");
  }
  if (absl::Status s = ConfigureCurveServer(router_, curve.keys); !s.ok()) {
    return s;
  }
  // ZeroMQ asks the context's ZAP handler about every CURVE handshake. It
  // is bound before the ROUTER binds and stays until the ROUTER closes:
  // without one, libzmq 4.3 would admit every key (ZMQ_ZAP_ENFORCE_DOMAIN
  // is a draft option Debian's build lacks).
  const std::string domain = "petrel";
  zmq_setsockopt(router_, ZMQ_ZAP_DOMAIN, domain.data(), domain.size());
  zap_ = std::make_unique<ZapHandler>(curve.authorized_keys_path, metrics());
  // The ROUTER's one monitor is the ConnectionGuard's, which reports the
  // failed handshakes to zap_.
  return zap_->Start(context_, nullptr);
}

void ZmqVan::Stop() {
  if (!running_.exchange(false)) {
    CloseSockets();
    return;
  }
  // Before the I/O thread terminates the context, which waits for every
  // socket to be closed.
  CloseThreadSockets();
  {
    absl::MutexLock lock(&receive_mu_);
    stopping_ = true;
  }
  stop_ = true;
  uint64_t one = 1;
  ssize_t n = write(stop_fd_, &one, sizeof(one));  // stays readable
  (void)n;
  Wake();
  io_thread_.join();
  for (int* fd : {&wake_fd_, &stop_fd_, &resume_fd_}) {
    close(*fd);
    *fd = -1;
  }
}

void ZmqVan::Wake() {
  uint64_t one = 1;
  ssize_t n = write(wake_fd_, &one, sizeof(one));
  (void)n;  // EAGAIN: the counter is full, so the thread wakes anyway
}

void ZmqVan::CloseThreadSockets() {
  std::vector<std::shared_ptr<ZmqThreadSockets>> sockets;
  absl::flat_hash_set<std::string> dead;
  {
    absl::MutexLock lock(&direct_mu_);
    direct_open_ = false;
    sockets.swap(thread_sockets_);
    dead = dead_addresses_;
  }
  for (auto& s : sockets) s->CloseAll(dead, short_linger_);
}

std::shared_ptr<ZmqThreadSockets> ZmqVan::ThisThreadSockets() {
  if (!direct_open_) return nullptr;
  auto it = this_thread_sockets.find(instance_);
  if (it != this_thread_sockets.end()) {
    if (auto sockets = it->second.lock()) return sockets;
  }
  // Forget the sockets of vans that are gone.
  absl::erase_if(this_thread_sockets,
                 [](const auto& entry) { return entry.second.expired(); });
  auto sockets = std::make_shared<ZmqThreadSockets>(
      context_,
      absl::StrCat(transport_id(), kThreadSocketSeparator,
                   thread_sockets_.size() + 1),
      options().curve.enabled() ? &options().curve.keys : nullptr);
  thread_sockets_.push_back(sockets);
  this_thread_sockets[instance_] = sockets;
  return sockets;
}

void ZmqVan::CloseSockets() {
  if (guard_ != nullptr) guard_->Stop();
  for (auto& [dealer, monitor] : monitors_) zmq_close(monitor.pair);
  monitors_.clear();
  absl::flat_hash_set<void*> sockets;
  absl::flat_hash_set<void*> dead;
  {
    absl::MutexLock lock(&direct_mu_);
    for (auto& [id, peer] : peers_) {
      sockets.insert(peer.socket);
      if (dead_addresses_.contains(peer.address)) dead.insert(peer.socket);
    }
  }
  for (void* socket : sockets) {
    if (dead.contains(socket)) {
      DropQueued(socket);
    } else if (short_linger_) {
      ShortenLinger(socket);
    }
    zmq_close(socket);
  }
  peers_.clear();
  if (router_ != nullptr) zmq_close(router_);
  router_ = nullptr;
  // Its sockets belong to the context, which waits for them.
  if (zap_ != nullptr) zap_->Stop();
  // Waits up to each DEALER's linger for queued messages to leave.
  if (context_ != nullptr) zmq_ctx_term(context_);
  context_ = nullptr;
}

void ZmqVan::Connect(const pb::Node& node) {
  // At once, so that a thread receiving in AwaitResponse accepts the node's
  // messages, and this thread's next Send finds the route.
  BindIdentity(node.transport_id(), node.id());
  {
    absl::MutexLock lock(&direct_mu_);
    addresses_[node.id()] =
        absl::StrCat("tcp://", node.host(), ":", node.port());
    if (options().curve.enabled()) peer_keys_[node.id()] = PeerKey(node);
  }
  if (OnIoThread()) {
    DoConnect(node);
    return;
  }
  absl::Status s = EnqueueConnect(node);
  if (!s.ok()) LOG(WARNING) << "connect to node " << node.id() << ": " << s;
}

absl::Status ZmqVan::Send(Message msg) {
  if (!running_) return absl::FailedPreconditionError("van is not running");
  std::vector<Buffer> frames = SplitFrames(
      EncodeHeader(msg.meta), std::move(msg.data), SplitPartBytes(options()));
  const int recipient = msg.meta.recipient();
  if (OnIoThread()) {  // a handler replying: straight to the socket
    DoSend(recipient, frames);
    return absl::OkStatus();
  }
  std::shared_ptr<ZmqThreadSockets> sockets;
  std::string address;
  std::string key;
  {
    absl::MutexLock lock(&direct_mu_);
    sockets = ThisThreadSockets();
    if (sockets == nullptr) {
      return absl::FailedPreconditionError("van is stopping");
    }
    auto it = addresses_.find(recipient);
    if (it != addresses_.end()) address = it->second;
    auto k = peer_keys_.find(recipient);
    if (k != peer_keys_.end()) key = k->second;
  }
  if (address.empty()) {
    CountDrop("no_route", absl::StrCat("no connection to node ", recipient));
    return absl::OkStatus();
  }
  absl::Status s = sockets->Send(address, key, frames);
  if (absl::IsFailedPrecondition(s)) return s;
  if (!s.ok()) {
    CountDrop("send_failed",
              absl::StrCat("to node ", recipient, ": ", s.message()));
    return absl::OkStatus();
  }
  CountSent(DataBytes(frames));
  return absl::OkStatus();
}

absl::Status ZmqVan::EnqueueConnect(const pb::Node& node) {
  bool wake = false;
  {
    absl::MutexLock lock(&queue_mu_);
    if (!running_) return absl::FailedPreconditionError("van is stopping");
    connects_.push_back(node);
    wake = !wake_pending_;
    wake_pending_ = true;
  }
  if (wake) {
    uint64_t one = 1;
    if (write(wake_fd_, &one, sizeof(one)) < 0 && errno != EAGAIN) {
      return absl::InternalError("cannot wake the van thread");
    }
  }
  return absl::OkStatus();
}

void ZmqVan::DrainQueue() {
  uint64_t count;
  ssize_t n = read(wake_fd_, &count, sizeof(count));
  (void)n;
  std::vector<pb::Node> connects;
  {
    absl::MutexLock lock(&queue_mu_);
    connects.swap(connects_);
    wake_pending_ = false;
  }
  for (const pb::Node& node : connects) DoConnect(node);
}

void ZmqVan::IoLoop() {
  io_thread_id_ = std::this_thread::get_id();
  absl::Time next_tick = absl::Now() + options().tick_interval;
  while (!stop_) {
    const int64_t to_tick = absl::ToInt64Milliseconds(next_tick - absl::Now());
    const long wait_ms = to_tick < 0 ? 0 : static_cast<long>(to_tick);
    if (AcquireRouter()) {
      zmq_pollitem_t items[2] = {{router_, 0, ZMQ_POLLIN, 0},
                                 {nullptr, wake_fd_, ZMQ_POLLIN, 0}};
      int rc = zmq_poll(items, 2, wait_ms);
      if (rc < 0 && errno != EINTR) {
        LOG_EVERY_T(ERROR, 1.0) << "zmq_poll: " << zmq_strerror(errno);
      }
      if (rc > 0 && (items[0].revents & ZMQ_POLLIN)) ReceiveAvailable();
      ReleaseRouter();
      if (rc > 0 && (items[1].revents & ZMQ_POLLIN)) DrainQueue();
    } else {
      // Lent out or given back lazily: sleep until an eager hand-back, a
      // connect or Stop (wake_fd_), the lazy-resume timer, or the tick.
      pollfd fds[2] = {{wake_fd_, POLLIN, 0}, {resume_fd_, POLLIN, 0}};
      int rc = poll(fds, 2, static_cast<int>(wait_ms));  // a tick <= 10 s
      if (rc > 0 && (fds[1].revents & POLLIN)) ResumeAfterTimer();
      if (rc > 0 && (fds[0].revents & POLLIN)) DrainQueue();
    }
    RunTickIfDue(&next_tick);
  }
  {
    // A borrower polls stop_fd_ and gives the ROUTER back at once.
    absl::MutexLock lock(&receive_mu_);
    auto returned = [this]() ABSL_SHARED_LOCKS_REQUIRED(receive_mu_) {
      return !borrowed_;
    };
    receive_mu_.Await(absl::Condition(&returned));
  }
  // Closing the DEALERs lets what they queued leave within the linger time.
  CloseSockets();
  io_thread_id_ = std::thread::id();
}

bool ZmqVan::AcquireRouter() {
  absl::MutexLock lock(&receive_mu_);
  if (borrowed_ || lazy_resume_) return false;
  io_receiving_ = true;
  return true;
}

void ZmqVan::ReleaseRouter() {
  absl::MutexLock lock(&receive_mu_);
  io_receiving_ = false;
}

void ZmqVan::ResumeAfterTimer() {
  uint64_t expirations;
  ssize_t n = read(resume_fd_, &expirations, sizeof(expirations));
  (void)n;
  absl::MutexLock lock(&receive_mu_);
  resume_armed_ = false;
  // While borrowed, the next lazy hand-back arms the timer again.
  if (borrowed_ || !lazy_resume_) return;
  const absl::Duration idle = absl::Now() - lazy_since_;
  if (idle >= kLazyResume) {
    lazy_resume_ = false;
  } else {
    ArmResumeTimer(kLazyResume - idle);
  }
}

void ZmqVan::ArmResumeTimer(absl::Duration after) {
  itimerspec spec = {};
  spec.it_value = absl::ToTimespec(std::max(after, absl::Microseconds(1)));
  if (timerfd_settime(resume_fd_, 0, &spec, nullptr) != 0) {
    lazy_resume_ = false;  // no timer: hand back at once instead
    Wake();
    return;
  }
  resume_armed_ = true;
}

void ZmqVan::RunTickIfDue(absl::Time* next_tick) {
  if (absl::Now() < *next_tick) return;
  if (on_tick_ || watch_ != nullptr) {
    absl::MutexLock lock(&handler_mu_);
    if (watch_ != nullptr) CheckConnections();
    if (on_tick_) on_tick_();
  }
  *next_tick = absl::Now() + options().tick_interval;
}

bool ZmqVan::ReceiveUntil(const std::function<bool()>& done,
                          absl::Time deadline) {
  if (OnIoThread()) return false;
  {
    absl::MutexLock lock(&receive_mu_);
    if (borrowed_ || stopping_ || !running_ || pending_requests() > 1) {
      return false;
    }
    borrowed_ = true;
    lazy_resume_ = false;  // an armed timer finds it borrowed and stops
    if (io_receiving_) {
      Wake();  // out of zmq_poll; it gives the ROUTER up
      auto idle = [this]() ABSL_SHARED_LOCKS_REQUIRED(receive_mu_) {
        return !io_receiving_;
      };
      receive_mu_.Await(absl::Condition(&idle));
    }
  }
  while (!done()) {
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) break;
    // zmq_poll counts whole milliseconds: round up, never spin. At most
    // kReceiveSlice, so that a request failed by another thread (a signal's
    // Postoffice::Interrupt) ends this wait without a message arriving.
    const long wait_ms = static_cast<long>(absl::ToInt64Milliseconds(
        std::min(left, kReceiveSlice) + absl::Microseconds(999)));
    zmq_pollitem_t items[2] = {{router_, 0, ZMQ_POLLIN, 0},
                               {nullptr, stop_fd_, ZMQ_POLLIN, 0}};
    int rc = zmq_poll(items, 2, wait_ms);
    if (rc < 0 && errno != EINTR) {
      LOG_EVERY_T(ERROR, 1.0) << "zmq_poll: " << zmq_strerror(errno);
    }
    if (rc > 0 && (items[1].revents & ZMQ_POLLIN)) break;  // stopping
    // One message at a time, so that the caller's answer ends the loop
    // without a further receive that would find nothing.
    if (rc > 0 && (items[0].revents & ZMQ_POLLIN)) {
      while (!done() && ReceiveOne()) {
      }
    }
  }
  const bool idle = pending_requests() == 0;
  absl::MutexLock lock(&receive_mu_);
  borrowed_ = false;
  if (idle) {
    // Probably back soon with the next request: the I/O thread sleeps on
    // unless nobody comes within kLazyResume. The timer is armed at most
    // once per kLazyResume, not per request.
    lazy_resume_ = true;
    lazy_since_ = absl::Now();
    if (!resume_armed_) ArmResumeTimer(kLazyResume);
  } else {
    Wake();
  }
  return true;
}

void ZmqVan::DoConnect(const pb::Node& node) {
  BindIdentity(node.transport_id(), node.id());
  std::string address = absl::StrCat("tcp://", node.host(), ":", node.port());
  if (watch_ != nullptr) watch_->Watch(node.id(), address);
  auto it = peers_.find(node.id());
  if (it != peers_.end()) {
    if (it->second.address == address) return;
    void* old = it->second.socket;
    peers_.erase(it);
    ReleaseSocket(old);
  }
  // One connection per address: a node reached under two ids (the
  // scheduler's temporary route to a joining node, then its assigned id)
  // must not get a second connection with the same routing id, which its
  // ROUTER would refuse, silently dropping everything sent on it.
  for (const auto& [id, peer] : peers_) {
    if (peer.address == address) {
      void* shared = peer.socket;
      peers_[node.id()] = Peer{shared, address};
      return;
    }
  }
  std::string error;
  const std::string monitor = NextMonitorEndpoint();
  const bool curve = options().curve.enabled();
  void* socket = NewDealer(context_, transport_id(), address, &error,
                           monitor.empty() ? nullptr : monitor.c_str(),
                           curve ? &options().curve.keys : nullptr,
                           curve ? PeerKey(node) : std::string());
  if (socket == nullptr) {
    CountDrop("connect_failed", error);
    return;
  }
  if (!monitor.empty()) AddMonitor(socket, monitor, address);
  VLOG(1) << "node " << my_id() << " connected to node " << node.id() << " at "
          << address;
  peers_[node.id()] = Peer{socket, address};
}

std::string ZmqVan::PeerKey(const pb::Node& node) const {
  if (!node.curve_public_key().empty()) return node.curve_public_key();
  if (node.id() == kSchedulerId) {
    return is_scheduler() ? options().curve.keys.public_key
                          : options().curve.scheduler_public_key;
  }
  return "";
}

void ZmqVan::ReleaseSocket(void* socket) {
  for (const auto& [id, peer] : peers_) {
    if (peer.socket == socket) return;  // still used under another id
  }
  RemoveMonitor(socket);
  zmq_close(socket);
}

void ZmqVan::DoSend(int recipient, const std::vector<Buffer>& frames) {
  auto it = peers_.find(recipient);
  if (it == peers_.end()) {
    CountDrop("no_route", absl::StrCat("no connection to node ", recipient));
    return;
  }
  absl::Status s = SendFrames(it->second.socket, frames);
  if (!s.ok()) {
    CountDrop("send_failed",
              absl::StrCat("to node ", recipient, ": ", s.message()));
    return;
  }
  CountSent(DataBytes(frames));
}

void ZmqVan::ReceiveAvailable() {
  // Receives until nothing is queued rather than asking ZMQ_EVENTS before
  // each message: every ZMQ_EVENTS query costs a poll() syscall, and on the
  // round-trip path these were a good part of the van's system time.
  for (int i = 0; i < kMaxReceivesPerWake && !stop_; ++i) {
    if (!ReceiveOne()) return;
  }
}

ZmqVan::ReadResult ZmqVan::ReadFrames(Received* r) {
  size_t max_frames = static_cast<size_t>(options().limits.max_frames) + 1;
  bool more = true;
  for (int part = 0; more; ++part) {
    auto* m = new zmq_msg_t;
    zmq_msg_init(m);
    if (zmq_msg_recv(m, router_, ZMQ_DONTWAIT) < 0) {
      const int err = errno;
      zmq_msg_close(m);
      delete m;
      if (part == 0 && err == EAGAIN) return ReadResult::kNothing;
      CountDrop("receive_failed", zmq_strerror(err));
      return ReadResult::kFailed;
    }
    more = zmq_msg_more(m);
    if (part == 0) {
      // An application thread's socket: "<transport id>#<n>".
      absl::string_view id(static_cast<char*>(zmq_msg_data(m)),
                           zmq_msg_size(m));
      r->from = std::string(id.substr(0, id.find(kThreadSocketSeparator[0])));
      zmq_msg_close(m);
      delete m;
      continue;
    }
    if (part == 1) {
      r->fd = zmq_msg_get(m, ZMQ_SRCFD);
      if (IsSplitHeader(static_cast<const char*>(zmq_msg_data(m)),
                        zmq_msg_size(m))) {
        r->split = true;  // its layout and parts follow
        max_frames = 1 + kMaxSplitWireFrames;
      }
    }
    r->wire_bytes += static_cast<int64_t>(zmq_msg_size(m)) + kWireBytesPerFrame;
    if (part == 1 && zap_ != nullptr) {
      // The ZAP handler's verdict on the connection (a received frame
      // carries it; the ROUTER's routing-id frame does not).
      const char* key = zmq_msg_gets(m, "User-Id");
      const char* roles = zmq_msg_gets(m, kRolesProperty);
      if (key != nullptr) r->peer.public_key = key;
      if (roles != nullptr) r->peer.roles = roles;
    }
    if (r->frames.size() >= max_frames) {  // keep draining, drop the rest
      r->too_many = true;
      zmq_msg_close(m);
      delete m;
      continue;
    }
    std::shared_ptr<zmq_msg_t> owner(m, [](zmq_msg_t* p) {
      zmq_msg_close(p);
      delete p;
    });
    r->frames.push_back(Buffer::Wrap(static_cast<char*>(zmq_msg_data(m)),
                                     zmq_msg_size(m), std::move(owner)));
  }
  return ReadResult::kRead;
}

bool ZmqVan::ReceiveOne() {
  Received r;
  const ReadResult read = ReadFrames(&r);
  if (read != ReadResult::kRead) return read == ReadResult::kFailed;
  std::vector<Buffer>& frames = r.frames;
  if (r.fd >= 0 && guard_ != nullptr) {
    guard_->Delivered(r.fd, r.wire_bytes,
                      [&] { return IsMemberConnection(r.from); });
  }
  if (frames.size() == 1 && IsHelloFrame(frames[0].data(), frames[0].size())) {
    return true;  // a connection's first message: for the guard only
  }
  if (r.too_many || frames.empty()) {
    CountDrop("resource_exhausted",
              frames.empty() ? "message with no header frame"
              : r.split      ? absl::StrCat("split message of more than ",
                                            kMaxSplitParts, " parts")
                             : "too many frames");
    return true;
  }
  Buffer header = frames.front();
  frames.erase(frames.begin());
  if (r.split) {
    absl::StatusOr<std::vector<Buffer>> joined =
        JoinSplitFrames(&header, std::move(frames), options().limits);
    if (!joined.ok()) {
      CountDrop(absl::AsciiStrToLower(
                    absl::StatusCodeToString(joined.status().code())),
                absl::StrCat("split message: ", joined.status().message()));
      return true;
    }
    frames = *std::move(joined);
  }
  absl::MutexLock lock(&handler_mu_);
  Deliver(r.from, header, std::move(frames), r.peer);
  return true;
}

}  // namespace petrel
