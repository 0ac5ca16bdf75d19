// EphemeralClusterKeys: CURVE keys for one job that petrel-launch runs
// (petrel-launch --curve): a keypair per process, made at start and never
// written but to an authorized-keys file in a private temporary directory
// (mode 0700), which the destructor removes. Each child gets its secret key
// and the scheduler's public key through the environment
// (PETREL_CURVE_SECRET_KEY, PETREL_AUTHORIZED_KEYS,
// PETREL_SCHEDULER_PUBLIC_KEY; docs/security.md), so the job runs with
// CURVE on without any key management, e.g. to measure its cost.
//
// Thread safety: not thread-safe.
#ifndef PETREL_TOOLS_LAUNCH_EPHEMERAL_KEYS_H_
#define PETREL_TOOLS_LAUNCH_EPHEMERAL_KEYS_H_

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

#include "security/curve_keys.h"

namespace petrel {

class EphemeralClusterKeys {
 public:
  // Keys for the scheduler, `num_servers` servers and `num_workers`
  // workers. Unavailable when ZeroMQ lacks CURVE or the directory cannot be
  // written.
  static absl::StatusOr<std::unique_ptr<EphemeralClusterKeys>> Create(
      int num_servers, int num_workers);
  ~EphemeralClusterKeys();
  EphemeralClusterKeys(const EphemeralClusterKeys&) = delete;
  EphemeralClusterKeys& operator=(const EphemeralClusterKeys&) = delete;

  // The environment of child `name` ("scheduler", "server 0", "worker 1");
  // empty for an unknown name.
  std::vector<std::pair<std::string, std::string>> EnvFor(
      const std::string& name) const;
  const std::string& authorized_keys_path() const { return path_; }

 private:
  EphemeralClusterKeys() = default;

  std::string dir_;
  std::string path_;
  std::string scheduler_public_key_;
  std::map<std::string, CurveKeyPair> keys_;  // by child name
};

}  // namespace petrel

#endif  // PETREL_TOOLS_LAUNCH_EPHEMERAL_KEYS_H_
