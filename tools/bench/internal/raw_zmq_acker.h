// Implementation details of the raw ZeroMQ baseline (tools/bench/raw_zmq.h):
// small RAII owners for a ZeroMQ context and socket, the payload pattern both
// processes agree on, and the acker that runs in the forked child. Not API.

#ifndef PETREL_TOOLS_BENCH_INTERNAL_RAW_ZMQ_ACKER_H_
#define PETREL_TOOLS_BENCH_INTERNAL_RAW_ZMQ_ACKER_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

#include "security/curve_keys.h"

namespace petrel {
namespace internal {

// Every ack is one frame of this many bytes: the received payload size as a
// native-endian int64, or kBadPayloadAck when the pattern did not match.
inline constexpr int kAckBytes = 8;
inline constexpr int64_t kBadPayloadAck = -1;

// An InternalError "<what>: <zmq_strerror(zmq_errno())>"; call it right after
// the failing zmq_* call.
absl::Status ZmqError(absl::string_view what);

// Owns a ZeroMQ context; terminates it on destruction (after every socket in
// it is closed). Not thread-safe; not copyable or movable.
class ZmqContext {
 public:
  ZmqContext();
  ~ZmqContext();
  ZmqContext(const ZmqContext&) = delete;
  ZmqContext& operator=(const ZmqContext&) = delete;

  // Null when zmq_ctx_new failed; check before use.
  void* get() const { return ctx_; }

 private:
  void* ctx_;
};

// Owns one ZeroMQ socket and closes it on destruction. Like every ZeroMQ
// socket it must be used by one thread only. Not copyable or movable.
// REQUIRES: the context outlives the socket.
class ZmqSocket {
 public:
  ZmqSocket() = default;
  ~ZmqSocket();
  ZmqSocket(const ZmqSocket&) = delete;
  ZmqSocket& operator=(const ZmqSocket&) = delete;

  // Creates a socket of `type` in `ctx` with ZMQ_LINGER 0 and both high-water
  // marks set to `hwm` messages. Returns the ZeroMQ error on failure.
  // REQUIRES: Open() has not been called yet.
  absl::Status Open(void* ctx, int type, int hwm);

  void* get() const { return socket_; }

 private:
  void* socket_ = nullptr;
};

// The byte at `offset` of every benchmark payload.
inline uint8_t PayloadPatternByte(int64_t offset) {
  return static_cast<uint8_t>((offset * 131 + 7) % 251);
}

// Fills `size` bytes at `data` with the payload pattern.
void FillPayloadPattern(uint8_t* data, int64_t size);

// Checks the pattern at up to 19 offsets spread over the payload (a full
// check would cost as much memory bandwidth as the transfer being measured).
bool PayloadPatternLooksRight(const uint8_t* data, int64_t size);

// Body of the forked acker process; never returns. Binds a ROUTER socket to
// tcp://<host>:*, writes "OK <endpoint>\n" (or "ERR <reason>\n") to
// `control_fd`, then answers every [identity][payload] message with
// [identity][8-byte ack]. Exits with status 0 when it receives an empty
// payload (the stop frame) or when `control_fd` reaches EOF (the parent
// closed it or died); 1 when set-up failed; 2 on a later ZeroMQ error.
// Uses no logging and no stdio, and leaves with _exit().
// With `curve` (not null), the ROUTER is a CURVE server with those keys.
[[noreturn]] void RunAckerChild(int control_fd, const std::string& host,
                                int hwm, const CurveKeyPair* curve = nullptr);

}  // namespace internal
}  // namespace petrel

#endif  // PETREL_TOOLS_BENCH_INTERNAL_RAW_ZMQ_ACKER_H_
