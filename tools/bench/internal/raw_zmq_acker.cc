#include "tools/bench/internal/raw_zmq_acker.h"

#include <cerrno>
#include <cstring>
#include <string>

#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zmq.h>

#include "absl/strings/str_cat.h"

namespace petrel {
namespace internal {
namespace {

// How long the acker sleeps in zmq_poll before looking again; the control
// fd wakes it sooner, so this only bounds a missed wake-up.
constexpr int kAckerPollMs = 1000;

enum AckerExit { kExitClean = 0, kExitSetupFailed = 1, kExitZmqFailed = 2 };

// Writes all of `line` to the parent, ignoring failures: a parent that is
// gone will be noticed as EOF on the next poll.
void TellParent(int fd, const std::string& line) {
  size_t done = 0;
  while (done < line.size()) {
    ssize_t n = send(fd, line.data() + done, line.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

// Binds the ROUTER and reports the endpoint (or the failure) to the parent.
bool SetUpRouter(int control_fd, void* ctx, const std::string& host, int hwm,
                 const CurveKeyPair* curve, ZmqSocket& router) {
  absl::Status status;
  if (ctx == nullptr) {
    status = ZmqError("zmq_ctx_new");
  } else {
    status = router.Open(ctx, ZMQ_ROUTER, hwm);
  }
  if (status.ok() && curve != nullptr) {
    status = ConfigureCurveServer(router.get(), *curve);
  }
  const std::string address = absl::StrCat("tcp://", host, ":*");
  if (status.ok() && zmq_bind(router.get(), address.c_str()) != 0) {
    status = ZmqError(absl::StrCat("zmq_bind ", address));
  }
  char endpoint[256] = {};
  size_t endpoint_len = sizeof(endpoint);
  if (status.ok() && zmq_getsockopt(router.get(), ZMQ_LAST_ENDPOINT, endpoint,
                                    &endpoint_len) != 0) {
    status = ZmqError("zmq_getsockopt ZMQ_LAST_ENDPOINT");
  }
  if (!status.ok()) {
    TellParent(control_fd, absl::StrCat("ERR ", status.message(), "\n"));
    return false;
  }
  TellParent(control_fd, absl::StrCat("OK ", endpoint, "\n"));
  return true;
}

// Receives and acks every message that is already queued. Returns false with
// `exit_code` set when the acker should stop.
bool AckQueued(void* router, int* exit_code) {
  while (true) {
    zmq_msg_t identity;
    zmq_msg_init(&identity);
    if (zmq_msg_recv(&identity, router, ZMQ_DONTWAIT) < 0) {
      const int err = zmq_errno();
      zmq_msg_close(&identity);
      if (err == EAGAIN || err == EINTR) return true;
      *exit_code = kExitZmqFailed;
      return false;
    }
    // ROUTER delivers [identity][payload] atomically, so this cannot block.
    zmq_msg_t payload;
    zmq_msg_init(&payload);
    const bool got_payload =
        zmq_msg_more(&identity) && zmq_msg_recv(&payload, router, 0) >= 0;
    const int64_t size = static_cast<int64_t>(zmq_msg_size(&payload));
    int64_t ack = size;
    if (got_payload &&
        !PayloadPatternLooksRight(
            static_cast<const uint8_t*>(zmq_msg_data(&payload)), size)) {
      ack = kBadPayloadAck;
    }
    zmq_msg_close(&payload);
    if (!got_payload || size == 0) {  // Stop frame (or a broken peer).
      zmq_msg_close(&identity);
      *exit_code = got_payload ? kExitClean : kExitZmqFailed;
      return false;
    }
    // zmq_msg_send takes over `identity` on success.
    if (zmq_msg_send(&identity, router, ZMQ_SNDMORE) < 0 ||
        zmq_send(router, &ack, sizeof(ack), 0) < 0) {
      zmq_msg_close(&identity);
      *exit_code = kExitZmqFailed;
      return false;
    }
  }
}

int AckerMain(int control_fd, const std::string& host, int hwm,
              const CurveKeyPair* curve) {
  ZmqContext ctx;
  ZmqSocket router;
  if (!SetUpRouter(control_fd, ctx.get(), host, hwm, curve, router)) {
    return kExitSetupFailed;
  }
  while (true) {
    zmq_pollitem_t items[2] = {{router.get(), 0, ZMQ_POLLIN, 0},
                               {nullptr, control_fd, ZMQ_POLLIN, 0}};
    if (zmq_poll(items, 2, kAckerPollMs) < 0) {
      if (zmq_errno() == EINTR) continue;
      return kExitZmqFailed;
    }
    // The parent never writes after start-up, so a readable control fd
    // means EOF or an error: the parent is done or gone.
    if (items[1].revents != 0) return kExitClean;
    int exit_code = kExitClean;
    if ((items[0].revents & ZMQ_POLLIN) &&
        !AckQueued(router.get(), &exit_code)) {
      return exit_code;
    }
  }
}

}  // namespace

absl::Status ZmqError(absl::string_view what) {
  return absl::InternalError(
      absl::StrCat(what, ": ", zmq_strerror(zmq_errno())));
}

ZmqContext::ZmqContext() : ctx_(zmq_ctx_new()) {}

ZmqContext::~ZmqContext() {
  if (ctx_ == nullptr) return;
  while (zmq_ctx_term(ctx_) != 0 && zmq_errno() == EINTR) {
  }
}

ZmqSocket::~ZmqSocket() {
  if (socket_ != nullptr) zmq_close(socket_);
}

absl::Status ZmqSocket::Open(void* ctx, int type, int hwm) {
  socket_ = zmq_socket(ctx, type);
  if (socket_ == nullptr) return ZmqError("zmq_socket");
  const int linger_ms = 0;
  if (zmq_setsockopt(socket_, ZMQ_LINGER, &linger_ms, sizeof(linger_ms)) != 0) {
    return ZmqError("zmq_setsockopt ZMQ_LINGER");
  }
  if (zmq_setsockopt(socket_, ZMQ_SNDHWM, &hwm, sizeof(hwm)) != 0) {
    return ZmqError(absl::StrCat("zmq_setsockopt ZMQ_SNDHWM=", hwm));
  }
  if (zmq_setsockopt(socket_, ZMQ_RCVHWM, &hwm, sizeof(hwm)) != 0) {
    return ZmqError(absl::StrCat("zmq_setsockopt ZMQ_RCVHWM=", hwm));
  }
  return absl::OkStatus();
}

void FillPayloadPattern(uint8_t* data, int64_t size) {
  for (int64_t i = 0; i < size; ++i) data[i] = PayloadPatternByte(i);
}

bool PayloadPatternLooksRight(const uint8_t* data, int64_t size) {
  constexpr int64_t kSpots = 16;
  for (int64_t k = 0; k <= kSpots && size > 0; ++k) {
    const int64_t i = (size - 1) * k / kSpots;
    if (data[i] != PayloadPatternByte(i)) return false;
  }
  // Also the second and second-to-last bytes, which catch an off-by-one.
  if (size > 1 && data[1] != PayloadPatternByte(1)) return false;
  if (size > 2 && data[size - 2] != PayloadPatternByte(size - 2)) return false;
  return true;
}

void RunAckerChild(int control_fd, const std::string& host, int hwm,
                   const CurveKeyPair* curve) {
  // Belt and braces next to the control fd: die with the parent.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  const int code = AckerMain(control_fd, host, hwm, curve);
  // _exit, not exit: the parent's atexit handlers and stdio buffers belong
  // to the parent.
  _exit(code);
}

}  // namespace internal
}  // namespace petrel
