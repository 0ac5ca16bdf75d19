#include "tests/harness/cluster_keys.h"

#include <cstdio>
#include <cstdlib>

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

namespace petrel {

ClusterKeys::ClusterKeys(
    const std::vector<std::pair<std::string, std::string>>& names_and_roles) {
  char tmpl[] = "/tmp/petrel_cluster_keysXXXXXX";
  // Test set-up: a full /tmp is not this code's bug, but nothing can go on.
  CHECK(mkdtemp(tmpl) != nullptr) << "cannot make a temporary directory";
  dir_ = tmpl;
  std::string listed;
  for (const auto& [name, roles] : names_and_roles) {
    CurveKeyPair keys = NewCurveKeyPair().value();
    CHECK(WriteKeyFile(SecretFile(name), keys.secret_key, name, true).ok());
    if (!roles.empty()) {
      absl::StrAppend(&listed, keys.public_key, " roles=", roles,
                      " name=", name, "\n");
    }
    keys_[name] = keys;
  }
  FILE* f = std::fopen(AuthorizedKeysFile().c_str(), "w");
  CHECK(f != nullptr);
  std::fputs(listed.c_str(), f);
  std::fclose(f);
}

ClusterKeys::~ClusterKeys() {
  for (const auto& [name, keys] : keys_) unlink(SecretFile(name).c_str());
  unlink(AuthorizedKeysFile().c_str());
  rmdir(dir_.c_str());
}

std::string ClusterKeys::SecretFile(const std::string& name) const {
  return absl::StrCat(dir_, "/", name, ".key");
}

std::vector<std::string> ClusterKeys::Flags(const std::string& name) const {
  return {"--curve_secret_key_file=" + SecretFile(name),
          "--authorized_keys=" + AuthorizedKeysFile()};
}

CurveOptions ClusterKeys::Options(const std::string& name) const {
  CurveOptions o;
  o.keys = keys(name);
  o.authorized_keys_path = AuthorizedKeysFile();
  o.scheduler_public_key = keys("scheduler").public_key;
  return o;
}

}  // namespace petrel
