#include "tools/bench/raw_zmq.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <optional>
#include <string>

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

#include "tools/bench/internal/raw_zmq_acker.h"
#include "tools/bench/latency_recorder.h"

namespace petrel {
namespace {

using internal::ZmqContext;
using internal::ZmqError;
using internal::ZmqSocket;

constexpr int64_t kMaxValueBytes = int64_t{1} << 30;
constexpr int kMaxInflight = 65536;
constexpr double kMaxDurationS = 86400;
// The parent polls in slices this long so it can check its deadlines.
constexpr int kPollSliceMs = 100;
constexpr size_t kMaxControlLine = 1024;

absl::Status ErrnoError(absl::string_view what) {
  return absl::InternalError(absl::StrCat(what, ": ", std::strerror(errno)));
}

absl::Status ValidateOptions(const RawZmqOptions& o) {
  if (o.value_bytes < 1 || o.value_bytes > kMaxValueBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("value_bytes is ", o.value_bytes, ", not in [1, ",
                     kMaxValueBytes, "]"));
  }
  if (o.inflight < 1 || o.inflight > kMaxInflight) {
    return absl::InvalidArgumentError(absl::StrCat(
        "inflight is ", o.inflight, ", not in [1, ", kMaxInflight, "]"));
  }
  if (o.iterations < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("iterations is ", o.iterations, ", not >= 0"));
  }
  if (o.iterations == 0 &&
      !(o.duration_s > 0 && o.duration_s <= kMaxDurationS)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "duration_s is ", o.duration_s, ", not in (0, ", kMaxDurationS, "]"));
  }
  if (o.progress_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("progress_timeout is ",
                     absl::FormatDuration(o.progress_timeout), ", not > 0"));
  }
  if (o.warmup_requests < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("warmup_requests is ", o.warmup_requests, ", not >= 0"));
  }
  // The address goes into "tcp://<host>:*"; IPv6 literals would need
  // brackets and ZMQ_IPV6, which the baseline does not need.
  if (o.host.empty() || o.host.find_first_of("/*[] ") != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("host is \"", o.host, "\", not a numeric IPv4 address"));
  }
  return absl::OkStatus();
}

// Owns the forked acker: the parent's end of the control socket pair and the
// child's pid. Reap() (or the destructor) closes the control fd, which makes
// the child exit, and waits for it. Not thread-safe; not copyable.
class AckerProcess {
 public:
  AckerProcess(pid_t pid, int control_fd)
      : pid_(pid), control_fd_(control_fd) {}
  ~AckerProcess() { Reap(absl::Seconds(5)).IgnoreError(); }
  AckerProcess(const AckerProcess&) = delete;
  AckerProcess& operator=(const AckerProcess&) = delete;

  int control_fd() const { return control_fd_; }

  // Reads the child's "OK <endpoint>" line. Unavailable when the child failed
  // to set up or exited; DeadlineExceeded after `timeout`.
  absl::StatusOr<std::string> ReadEndpoint(absl::Duration timeout);

  // Closes the control fd and waits up to `grace` for the child to exit,
  // then kills it. Returns an error unless the child exited with status 0.
  // Idempotent: later calls return OK.
  absl::Status Reap(absl::Duration grace);

 private:
  pid_t pid_;
  int control_fd_;
};

absl::StatusOr<std::string> AckerProcess::ReadEndpoint(absl::Duration timeout) {
  const int64_t deadline = SteadyNowNanos() + absl::ToInt64Nanoseconds(timeout);
  std::string line;
  while (line.empty() || line.back() != '\n') {
    const int64_t left_ms = (deadline - SteadyNowNanos()) / 1000000;
    if (left_ms <= 0) {
      return absl::DeadlineExceededError(
          absl::StrCat("acker did not report its endpoint within ",
                       absl::FormatDuration(timeout)));
    }
    pollfd pfd = {control_fd_, POLLIN, 0};
    const int rc = poll(
        &pfd, 1, static_cast<int>(std::min<int64_t>(left_ms, kPollSliceMs)));
    if (rc < 0 && errno != EINTR) return ErrnoError("poll on acker control fd");
    if (rc <= 0) continue;
    char buf[256];
    const ssize_t n = read(control_fd_, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError("read from acker control fd");
    if (n == 0) {
      return absl::UnavailableError(
          absl::StrCat("acker exited during start-up; it said \"", line, "\""));
    }
    line.append(buf, static_cast<size_t>(n));
    if (line.size() > kMaxControlLine) {
      return absl::InternalError(absl::StrCat("acker start-up line is over ",
                                              kMaxControlLine, " bytes"));
    }
  }
  line.pop_back();
  if (absl::StartsWith(line, "OK ")) return line.substr(3);
  return absl::UnavailableError(absl::StrCat("acker failed to start: ", line));
}

absl::Status AckerProcess::Reap(absl::Duration grace) {
  if (control_fd_ >= 0) {
    close(control_fd_);
    control_fd_ = -1;
  }
  if (pid_ <= 0) return absl::OkStatus();
  const pid_t pid = pid_;
  pid_ = -1;
  const int64_t deadline = SteadyNowNanos() + absl::ToInt64Nanoseconds(grace);
  int wstatus = 0;
  bool killed = false;
  while (true) {
    const pid_t rc = waitpid(pid, &wstatus, killed ? 0 : WNOHANG);
    if (rc == pid) break;
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0) return ErrnoError(absl::StrCat("waitpid ", pid));
    if (SteadyNowNanos() > deadline) {
      kill(pid, SIGKILL);
      killed = true;
      continue;
    }
    usleep(2000);
  }
  if (killed) {
    return absl::DeadlineExceededError(
        absl::StrCat("acker pid ", pid, " did not exit within ",
                     absl::FormatDuration(grace), "; killed it"));
  }
  if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) return absl::OkStatus();
  if (WIFEXITED(wstatus)) {
    return absl::InternalError(absl::StrCat(
        "acker pid ", pid, " exited with status ", WEXITSTATUS(wstatus)));
  }
  return absl::InternalError(
      absl::StrCat("acker pid ", pid, " died from signal ", WTERMSIG(wstatus)));
}

void NoopFree(void* /*data*/, void* /*hint*/) {}

// The parent's side: one DEALER, the reused payload and the send times of
// requests not yet acked (TCP and the acker preserve order, so the oldest
// send time belongs to the next ack).
//
// REQUIRES: `payload` holds options.value_bytes bytes and outlives the ZeroMQ
// context (ZeroMQ's I/O thread may still read it after the socket closes).
class Sender {
 public:
  Sender(AckerProcess* acker, const RawZmqOptions& options,
         const uint8_t* payload)
      : acker_(acker), options_(options), payload_(payload) {}

  // With `curve`, a CURVE client of a server holding `server_key`.
  absl::Status Connect(void* ctx, const std::string& endpoint, int hwm,
                       const CurveKeyPair* curve,
                       const std::string& server_key);

  // Keeps `inflight` requests outstanding until `iterations` requests are
  // acked (when > 0) or until `end_ns` passes and everything sent is acked.
  // Records each latency in `latencies` when it is not null.
  absl::Status Run(int inflight, int64_t iterations, int64_t end_ns,
                   LatencyRecorder* latencies);

  // Sends the empty stop frame.
  absl::Status SendStop();

  int64_t acked() const { return acked_; }
  int64_t bad_acks() const { return bad_acks_; }
  int64_t last_ack_ns() const { return last_ack_ns_; }

 private:
  absl::Status SendOne();
  // Receives every ack already queued; returns how many.
  absl::StatusOr<int> DrainAcks(LatencyRecorder* latencies);

  AckerProcess* const acker_;
  const RawZmqOptions& options_;
  ZmqSocket dealer_;
  const uint8_t* const payload_;
  std::deque<int64_t> send_ns_;
  int64_t acked_ = 0;
  int64_t bad_acks_ = 0;
  int64_t last_ack_ns_ = 0;
};

absl::Status Sender::Connect(void* ctx, const std::string& endpoint, int hwm,
                             const CurveKeyPair* curve,
                             const std::string& server_key) {
  if (absl::Status s = dealer_.Open(ctx, ZMQ_DEALER, hwm); !s.ok()) return s;
  if (curve != nullptr) {
    if (absl::Status s =
            ConfigureCurveClient(dealer_.get(), *curve, server_key);
        !s.ok()) {
      return s;
    }
  }
  // A send that cannot be queued for this long means the acker is stuck.
  const int sndtimeo_ms = static_cast<int>(std::min<int64_t>(
      absl::ToInt64Milliseconds(options_.progress_timeout), 1 << 30));
  if (zmq_setsockopt(dealer_.get(), ZMQ_SNDTIMEO, &sndtimeo_ms,
                     sizeof(sndtimeo_ms)) != 0) {
    return ZmqError("zmq_setsockopt ZMQ_SNDTIMEO");
  }
  if (zmq_connect(dealer_.get(), endpoint.c_str()) != 0) {
    return ZmqError(absl::StrCat("zmq_connect ", endpoint));
  }
  return absl::OkStatus();
}

absl::Status Sender::SendOne() {
  // Zero copy: ZeroMQ reads the buffer in its I/O thread; NoopFree because
  // the buffer is reused and freed only after the context is terminated.
  zmq_msg_t msg;
  // zmq_msg_init_data takes a non-const pointer but never writes through it.
  if (zmq_msg_init_data(&msg, const_cast<uint8_t*>(payload_),
                        options_.value_bytes, &NoopFree, nullptr) != 0) {
    return ZmqError("zmq_msg_init_data");
  }
  send_ns_.push_back(SteadyNowNanos());
  if (zmq_msg_send(&msg, dealer_.get(), 0) < 0) {
    const bool timed_out = zmq_errno() == EAGAIN;
    absl::Status s = ZmqError("zmq_msg_send payload");
    zmq_msg_close(&msg);
    if (timed_out) {
      return absl::DeadlineExceededError(
          absl::StrCat("could not queue a request within ",
                       absl::FormatDuration(options_.progress_timeout)));
    }
    return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<int> Sender::DrainAcks(LatencyRecorder* latencies) {
  int n = 0;
  while (true) {
    int64_t ack = 0;
    const int rc = zmq_recv(dealer_.get(), &ack, sizeof(ack), ZMQ_DONTWAIT);
    if (rc < 0) {
      if (zmq_errno() == EAGAIN || zmq_errno() == EINTR) return n;
      return ZmqError("zmq_recv ack");
    }
    const int64_t now = SteadyNowNanos();
    if (send_ns_.empty()) {
      return absl::InternalError("acker sent an ack with nothing outstanding");
    }
    if (latencies != nullptr) latencies->AddNanos(now - send_ns_.front());
    send_ns_.pop_front();
    if (rc != internal::kAckBytes || ack != options_.value_bytes) ++bad_acks_;
    ++acked_;
    ++n;
    last_ack_ns_ = now;
  }
}

absl::Status Sender::Run(int inflight, int64_t iterations, int64_t end_ns,
                         LatencyRecorder* latencies) {
  const int64_t target = iterations > 0 ? acked_ + iterations : -1;
  int64_t sent = acked_;
  int64_t last_progress_ns = SteadyNowNanos();
  const int64_t progress_timeout_ns =
      absl::ToInt64Nanoseconds(options_.progress_timeout);
  while (true) {
    while (sent - acked_ < inflight &&
           (target >= 0 ? sent < target : SteadyNowNanos() < end_ns)) {
      if (absl::Status s = SendOne(); !s.ok()) return s;
      ++sent;
    }
    if (sent == acked_) return absl::OkStatus();
    zmq_pollitem_t items[2] = {{dealer_.get(), 0, ZMQ_POLLIN, 0},
                               {nullptr, acker_->control_fd(), ZMQ_POLLIN, 0}};
    if (zmq_poll(items, 2, kPollSliceMs) < 0) {
      if (zmq_errno() == EINTR) continue;
      return ZmqError("zmq_poll");
    }
    if (items[1].revents != 0) {
      return absl::UnavailableError(absl::StrCat(
          "acker exited with ", sent - acked_, " requests unacked"));
    }
    absl::StatusOr<int> got = DrainAcks(latencies);
    if (!got.ok()) return got.status();
    if (*got > 0) {
      last_progress_ns = SteadyNowNanos();
    } else if (SteadyNowNanos() - last_progress_ns > progress_timeout_ns) {
      return absl::DeadlineExceededError(absl::StrCat(
          "no ack within ", absl::FormatDuration(options_.progress_timeout),
          " with ", sent - acked_, " requests outstanding"));
    }
  }
}

absl::Status Sender::SendStop() {
  if (zmq_send(dealer_.get(), nullptr, 0, 0) < 0) {
    return ZmqError("zmq_send stop frame");
  }
  return absl::OkStatus();
}

// Everything that happens in the parent between fork and reaping.
absl::StatusOr<BenchResult> DriveAcker(AckerProcess& acker,
                                       const RawZmqOptions& options, int hwm,
                                       const CurveKeyPair* client,
                                       const std::string& server_key) {
  absl::StatusOr<std::string> endpoint =
      acker.ReadEndpoint(options.progress_timeout);
  if (!endpoint.ok()) return endpoint.status();
  // Destroyed in reverse order: the socket closes, the context ends (which
  // waits for ZeroMQ's I/O thread), and only then is the payload freed.
  std::unique_ptr<uint8_t, decltype(&std::free)> payload(
      static_cast<uint8_t*>(std::malloc(options.value_bytes)), &std::free);
  if (payload == nullptr) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "cannot allocate a ", options.value_bytes, "-byte payload"));
  }
  internal::FillPayloadPattern(payload.get(), options.value_bytes);
  ZmqContext ctx;
  if (ctx.get() == nullptr) return ZmqError("zmq_ctx_new");
  Sender sender(&acker, options, payload.get());
  if (absl::Status s =
          sender.Connect(ctx.get(), *endpoint, hwm, client, server_key);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = sender.Run(1, options.warmup_requests, 0, nullptr);
      !s.ok()) {
    return s;
  }
  BenchResult result;
  result.workload = options.workload_name;
  result.value_bytes = options.value_bytes;
  result.inflight = options.inflight;
  const int64_t warm_acked = sender.acked();
  const int64_t start_ns = SteadyNowNanos();
  const int64_t end_ns =
      start_ns + static_cast<int64_t>(options.duration_s * 1e9);
  if (absl::Status s = sender.Run(options.inflight, options.iterations, end_ns,
                                  &result.latencies);
      !s.ok()) {
    return s;
  }
  result.requests = sender.acked() - warm_acked;
  result.seconds =
      result.requests > 0 ? (sender.last_ack_ns() - start_ns) / 1e9 : 0;
  result.verified = sender.bad_acks() == 0;
  if (absl::Status s = sender.SendStop(); !s.ok()) return s;
  return result;
}

}  // namespace

absl::StatusOr<BenchResult> RunRawZmq(const RawZmqOptions& options) {
  if (absl::Status s = ValidateOptions(options); !s.ok()) return s;
  const int hwm = std::max(1000, 4 * options.inflight);
  std::optional<CurveKeyPair> server_keys;
  std::optional<CurveKeyPair> client_keys;
  if (options.curve) {
    absl::StatusOr<CurveKeyPair> s = NewCurveKeyPair();
    absl::StatusOr<CurveKeyPair> c = NewCurveKeyPair();
    if (!s.ok()) return s.status();
    if (!c.ok()) return c.status();
    server_keys = *s;
    client_keys = *c;
  }
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    return ErrnoError("socketpair for the acker");
  }
  const pid_t pid = fork();
  if (pid < 0) {
    absl::Status s = ErrnoError("fork of the acker");
    close(fds[0]);
    close(fds[1]);
    return s;
  }
  if (pid == 0) {
    close(fds[0]);
    internal::RunAckerChild(fds[1], options.host, hwm,  // Never returns.
                            server_keys ? &*server_keys : nullptr);
  }
  close(fds[1]);
  AckerProcess acker(pid, fds[0]);
  absl::StatusOr<BenchResult> result =
      DriveAcker(acker, options, hwm, client_keys ? &*client_keys : nullptr,
                 server_keys ? server_keys->public_key : "");
  absl::Status reaped = acker.Reap(absl::Seconds(5));
  if (!result.ok()) return result.status();
  if (!reaped.ok()) return reaped;
  return result;
}

}  // namespace petrel
