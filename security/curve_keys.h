// CURVE keys: a node's keypair, the files and environment variables that
// hold keys, and the socket options that turn ZeroMQ's CURVE security on
// (docs/security.md). A key is written in Z85, 40 characters.
//
// A key file holds one key on a line of its own; lines starting with "#"
// and blank lines are comments. A file with a secret key
// must not be readable or writable by group or others: LoadCurveOptions
// refuses it, naming the file.
//
// Thread safety: functions are thread-safe; the socket functions follow
// ZeroMQ's rule (the socket's own thread).
#ifndef PETREL_SECURITY_CURVE_KEYS_H_
#define PETREL_SECURITY_CURVE_KEYS_H_

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace petrel {

inline constexpr size_t kZ85KeyLength = 40;

struct CurveKeyPair {
  std::string public_key;  // Z85
  std::string secret_key;  // Z85
};

// A node's transport security. Off (the cluster is open) when `keys` is
// empty.
struct CurveOptions {
  // This node's keypair. Default: none (CURVE off).
  CurveKeyPair keys;
  // The authorized-keys file every listening socket admits peers from
  // (security/authorized_keys.h), re-read when it changes. Required with keys.
  std::string authorized_keys_path;
  // The scheduler's public key, which a node needs to connect to it.
  // Ignored by the scheduler itself.
  std::string scheduler_public_key;

  bool enabled() const { return !keys.secret_key.empty(); }
};

// Where a node's keys come from: flags and environment variables (read by
// the binary's flags module and passed in; empty = not given). A flag
// beats its environment variable.
struct CurveKeySources {
  std::string secret_key_file;           // --curve_secret_key_file
  std::string public_key_file;           // --curve_public_key_file
  std::string authorized_keys_path;      // --authorized_keys
  std::string scheduler_public_key;      // --scheduler_public_key (key or file)
  std::string env_secret_key;            // PETREL_CURVE_SECRET_KEY (the key)
  std::string env_public_key;            // PETREL_CURVE_PUBLIC_KEY (the key)
  std::string env_authorized_keys;       // PETREL_AUTHORIZED_KEYS (a path)
  std::string env_scheduler_public_key;  // PETREL_SCHEDULER_PUBLIC_KEY
};

// Whether `key` is 40 characters of valid Z85 that decode to 32 bytes.
bool IsZ85Key(absl::string_view key);

// A fresh keypair (zmq_curve_keypair). Unavailable when ZeroMQ was built
// without CURVE.
absl::StatusOr<CurveKeyPair> NewCurveKeyPair();

// The public key of `secret_key`. InvalidArgument when it is not a key.
absl::StatusOr<std::string> PublicKeyOf(absl::string_view secret_key);

// Reads the key in file `path` (format above). With `secret`, the file must
// not be accessible to group or others. InvalidArgument naming the file:
// missing, unreadable, too open, or without exactly one key line.
absl::StatusOr<std::string> ReadKeyFile(const std::string& path, bool secret);

// Writes `key` to a new file `path` with `comment` lines above it (each
// prefixed "# "); mode 0600 when `secret`, else 0644. AlreadyExists when
// the file exists (it is never overwritten); InvalidArgument otherwise.
absl::Status WriteKeyFile(const std::string& path, absl::string_view key,
                          absl::string_view comment, bool secret);

// Builds a node's CurveOptions from `sources`: the secret key from its
// file or the environment, the public key derived from it (and checked
// against a given public key), the authorized-keys path, and the
// scheduler's public key (a Z85 key, or a file holding one). CURVE stays
// off when no secret key is given; then giving any other key setting is
// InvalidArgument. With a secret key, an authorized-keys file is required.
// InvalidArgument names the flag or variable and what to fix.
absl::StatusOr<CurveOptions> LoadCurveOptions(const CurveKeySources& sources);

// Fills the env_* fields of `sources` from the PETREL_CURVE_SECRET_KEY,
// PETREL_CURVE_PUBLIC_KEY, PETREL_AUTHORIZED_KEYS and
// PETREL_SCHEDULER_PUBLIC_KEY variables as `get_env` (std::getenv, or a
// test's) reads them; unset leaves a field empty. The one place that names
// the variables: the daemons, petrelctl and the Python client use it.
void ReadCurveKeyEnvironment(
    const std::function<const char*(const char*)>& get_env,
    CurveKeySources* sources);

// Makes `socket` a CURVE server with `keys`: peers must be CURVE clients
// that know keys.public_key; the context's ZAP handler (zap_handler.h)
// decides which clients are admitted. Call before bind. InvalidArgument for
// a bad key, Unavailable when ZeroMQ refuses.
absl::Status ConfigureCurveServer(void* socket, const CurveKeyPair& keys);

// Makes `socket` a CURVE client with `keys` that accepts only a server
// holding `server_public_key`. Call before connect. For every program that
// talks to Petrel nodes directly (e.g. petrelctl with an admin key).
// InvalidArgument for a bad key, Unavailable when ZeroMQ refuses.
absl::Status ConfigureCurveClient(void* socket, const CurveKeyPair& keys,
                                  absl::string_view server_public_key);

}  // namespace petrel

#endif  // PETREL_SECURITY_CURVE_KEYS_H_
