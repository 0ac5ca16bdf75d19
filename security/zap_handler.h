// ZapHandler: the ZeroMQ authentication (ZAP, RFC 27) handler of one ZeroMQ
// context. Every CURVE handshake on a listening socket of the context asks
// it whether to admit the client's public key: it admits the keys listed in
// the cluster's authorized-keys file (authorized_keys.h) and reports, for
// each admitted connection, the key as the ZAP User-Id and its roles as the
// metadata property kRolesProperty, which every message received on the
// connection carries (zmq_msg_gets). It re-reads the file when it changes
// (checked at each handshake), so keys can be added and retired while the
// job runs; a file that no longer parses is logged and the previous list
// kept. It also watches one socket's failed handshakes (plaintext peers,
// peers that do not know this node's key) through a socket monitor.
//
// Refusals are counted in petrel_van_handshakes_refused_total{reason}:
// "unknown_key" (the key is not listed) and "handshake_failed" (the
// handshake broke before authentication: a plaintext peer, a wrong server
// key, garbage). Both series exist from Start, at 0.
//
// Thread safety: Start and Stop on the owner's thread; one thread of its
// own answers requests. reloads() is thread-safe.
#ifndef PETREL_SECURITY_ZAP_HANDLER_H_
#define PETREL_SECURITY_ZAP_HANDLER_H_

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include <sys/stat.h>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

#include "base/metrics.h"
#include "security/authorized_keys.h"

namespace petrel {

// The ZAP metadata property that carries an admitted key's roles
// ("server,worker"); read it from a received frame with zmq_msg_gets.
inline constexpr char kRolesProperty[] = "Petrel-Roles";

// What a ZAP request asks (RFC 27 frames 2, 3 and 5..6).
struct ZapRequest {
  std::string domain;
  std::string address;     // the peer's IP address
  std::string mechanism;   // "CURVE", "NULL", "PLAIN"
  std::string client_key;  // CURVE: the client's 32-byte public key
};

struct ZapDecision {
  bool admit = false;
  std::string status_code;  // "200" or "400"
  std::string status_text;
  std::string user_id;  // admitted: the Z85 public key
  std::string roles;    // admitted: KeyRolesString of its roles
  std::string name;     // the key's name= (may be empty)
};

// The decision for `request` under `keys`: admit a CURVE client whose key
// is listed; refuse anything else.
ZapDecision DecideZap(const ZapRequest& request, const AuthorizedKeys& keys);

class ZapHandler {
 public:
  // `metrics` must outlive this object.
  ZapHandler(std::string authorized_keys_path, MetricsRegistry* metrics);
  ~ZapHandler();
  ZapHandler(const ZapHandler&) = delete;
  ZapHandler& operator=(const ZapHandler&) = delete;

  // Reads the authorized-keys file (InvalidArgument naming it when it is
  // missing or malformed), binds inproc://zeromq.zap.01 in `context`,
  // monitors the failed handshakes of `watched` (a socket of `context`, or
  // null) and starts the thread. Call before `watched` binds, so that no
  // handshake goes unanswered. Unavailable when ZeroMQ refuses (another
  // handler already serves the context).
  absl::Status Start(void* context, void* watched);
  // Stops the thread and closes its sockets; before the context is
  // terminated. Idempotent.
  void Stop();

  // Counts a failed CURVE handshake (a plaintext peer, or one that does not
  // know this node's public key) seen by whoever monitors the socket when
  // Start was given no `watched` socket (a socket has one monitor: ZmqVan's
  // ConnectionGuard). Thread-safe.
  void CountHandshakeFailed();

  // How many times the file was re-read after a change. Thread-safe.
  int64_t reloads() const { return reloads_.load(); }

 private:
  void Loop();
  void Answer();
  void ReadMonitorEvent();
  // Re-reads the file if its identity (inode, size, mtime) changed.
  void ReloadIfChanged() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string path_;
  MetricsRegistry* const metrics_;
  Counter* unknown_key_;
  Counter* handshake_failed_;
  Counter* reload_errors_;
  Gauge* listed_keys_;

  void* zap_ = nullptr;      // REP, owned by the thread once started
  void* monitor_ = nullptr;  // PAIR reading `watched`'s events, or null
  int stop_fd_ = -1;
  std::thread thread_;
  std::atomic<int64_t> reloads_{0};

  absl::Mutex mu_;
  AuthorizedKeys keys_ ABSL_GUARDED_BY(mu_);
  struct stat file_ ABSL_GUARDED_BY(mu_) = {};
};

}  // namespace petrel

#endif  // PETREL_SECURITY_ZAP_HANDLER_H_
