// Tools for tests that play a hostile peer against real daemons: a raw
// ZeroMQ DEALER that sends any frames under any routing id (large frames
// without copying), a flood of idle TCP connections, a ROUTER that notices
// whether anybody connects to it, and a process's resident memory.
//
// Thread safety: each object from one thread at a time.
#ifndef PETREL_TESTS_HARNESS_HOSTILE_PEER_H_
#define PETREL_TESTS_HARNESS_HOSTILE_PEER_H_

#include <cstdint>
#include <string>
#include <vector>

#include <sys/types.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include "security/curve_keys.h"

namespace petrel {

// A DEALER connected to 127.0.0.1:`port` with routing id `routing_id`
// (ZeroMQ picks one when empty). With `curve`, it is a CURVE client holding
// those keys of a node whose public key is `server_key` (ZeroMQ refuses
// to send until the handshake is done). Closing drops what is still queued.
class RawDealer {
 public:
  RawDealer(int port, const std::string& routing_id = "",
            const CurveKeyPair* curve = nullptr,
            const std::string& server_key = "");
  ~RawDealer();
  RawDealer(const RawDealer&) = delete;
  RawDealer& operator=(const RawDealer&) = delete;

  // Queues one multipart message.
  absl::Status Send(const std::vector<std::string>& frames);
  // Queues a message of `head` and then `count` frames of `frame_bytes`
  // zero bytes each, all sharing one buffer (nothing is copied, so the test
  // process does not hold the bytes it sends).
  absl::Status SendLarge(const std::string& head, int count,
                         size_t frame_bytes);

 private:
  void* context_;
  void* socket_;
  std::vector<char*> large_;  // buffers of SendLarge, freed at close
  std::vector<size_t> large_sizes_;
};

// A ROUTER bound to a free port on 127.0.0.1 that counts the connections
// made to it.
class ConnectionCounter {
 public:
  ConnectionCounter();
  ~ConnectionCounter();
  ConnectionCounter(const ConnectionCounter&) = delete;
  ConnectionCounter& operator=(const ConnectionCounter&) = delete;

  int port() const { return port_; }
  // Connections accepted so far.
  int Accepted();

 private:
  void* context_;
  void* router_;
  void* monitor_;
  int port_ = 0;
  int accepted_ = 0;
};

// Opens `count` TCP connections to 127.0.0.1:`port` that send nothing (not
// even a ZeroMQ greeting), without waiting for them to be accepted. Returns
// their descriptors; the caller closes them (CloseAll).
absl::StatusOr<std::vector<int>> OpenIdleConnections(int port, int count);
void CloseAll(std::vector<int>* fds);

// VmRSS of process `pid` in bytes, from /proc/PID/status.
absl::StatusOr<int64_t> ResidentBytes(pid_t pid);
// VmHWM (the peak of VmRSS so far) of process `pid` in bytes.
absl::StatusOr<int64_t> PeakResidentBytes(pid_t pid);

}  // namespace petrel

#endif  // PETREL_TESTS_HARNESS_HOSTILE_PEER_H_
