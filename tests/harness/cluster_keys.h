// ClusterKeys: CURVE keys for a test cluster (docs/security.md), in a
// temporary directory removed by the destructor: a keypair per name, each
// secret key in NAME.key (mode 0600), and an authorized-keys file listing
// every name that has a role. The name "scheduler" holds the scheduler's
// key.
//
// Thread safety: not thread-safe.
#ifndef PETREL_TESTS_HARNESS_CLUSTER_KEYS_H_
#define PETREL_TESTS_HARNESS_CLUSTER_KEYS_H_

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "security/curve_keys.h"

namespace petrel {

class ClusterKeys {
 public:
  // `names_and_roles`: each name and its roles ("worker", "server,worker");
  // an empty role makes a key that is not listed (a stranger's). Must
  // include {"scheduler", "scheduler"}.
  explicit ClusterKeys(
      const std::vector<std::pair<std::string, std::string>>& names_and_roles);
  ~ClusterKeys();
  ClusterKeys(const ClusterKeys&) = delete;
  ClusterKeys& operator=(const ClusterKeys&) = delete;

  std::string SecretFile(const std::string& name) const;
  std::string AuthorizedKeysFile() const { return dir_ + "/authorized_keys"; }
  const CurveKeyPair& keys(const std::string& name) const {
    return keys_.at(name);
  }
  // The flags of a daemon holding `name`'s key (the scheduler's public key
  // comes from the authorized-keys file).
  std::vector<std::string> Flags(const std::string& name) const;
  // The CurveOptions of an in-process node holding `name`'s key.
  CurveOptions Options(const std::string& name) const;

 private:
  std::string dir_;
  std::map<std::string, CurveKeyPair> keys_;
};

}  // namespace petrel

#endif  // PETREL_TESTS_HARNESS_CLUSTER_KEYS_H_
