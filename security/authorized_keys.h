// AuthorizedKeys: the cluster's authorized-keys file, which lists the CURVE
// public keys allowed to connect and the roles each may take
// (docs/security.md). One key per line:
//
//   <40-character Z85 public key> roles=server,worker [name=NAME]
//
// Roles are scheduler, server, worker and admin (petrelctl). Lines starting
// with "#" and blank lines are comments (a key never begins with "#").
// Each key appears once.
//
// Thread safety: an AuthorizedKeys is an immutable value after Parse.
#ifndef PETREL_SECURITY_AUTHORIZED_KEYS_H_
#define PETREL_SECURITY_AUTHORIZED_KEYS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace petrel {

// Bits of the roles a key may take.
enum KeyRole : uint32_t {
  kKeyRoleScheduler = 1,
  kKeyRoleServer = 2,
  kKeyRoleWorker = 4,
  kKeyRoleAdmin = 8,
};

// "server,worker" for kKeyRoleServer | kKeyRoleWorker, in the order
// scheduler, server, worker, admin.
std::string KeyRolesString(uint32_t roles);
// The bits of a comma-separated role list; InvalidArgument naming an
// unknown or empty role.
absl::StatusOr<uint32_t> ParseKeyRoles(absl::string_view list);
// The bit of one role name ("server"); 0 for an unknown name.
uint32_t KeyRoleOf(absl::string_view name);

struct AuthorizedKey {
  std::string public_key;  // Z85
  uint32_t roles = 0;      // KeyRole bits, at least one
  std::string name;        // from name=..., may be empty
};

class AuthorizedKeys {
 public:
  // Parses the file's `text`; InvalidArgument naming `source` and the line
  // (a malformed key, a missing or unknown role, an unknown field, a key
  // listed twice).
  static absl::StatusOr<AuthorizedKeys> Parse(absl::string_view text,
                                              absl::string_view source);
  // Reads and parses the file at `path`.
  static absl::StatusOr<AuthorizedKeys> Load(const std::string& path);

  // The entry of Z85 `public_key`, or null when it is not listed.
  const AuthorizedKey* Find(absl::string_view public_key) const;
  size_t size() const { return keys_.size(); }
  // The public keys with `role`, in no particular order.
  std::vector<std::string> KeysWithRole(KeyRole role) const;

 private:
  absl::flat_hash_map<std::string, AuthorizedKey> keys_;
};

struct CurveOptions;

// Completes a non-scheduler node's CURVE settings: reads the
// authorized-keys file (InvalidArgument naming it when it is missing or
// malformed) and, when no scheduler key was given, takes the one key with
// role scheduler from it (InvalidArgument unless exactly one). Nothing to
// do when CURVE is off; only the file check for the scheduler itself.
absl::Status CompleteCurveOptions(bool is_scheduler, CurveOptions* curve);

}  // namespace petrel

#endif  // PETREL_SECURITY_AUTHORIZED_KEYS_H_
