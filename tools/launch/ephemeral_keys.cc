#include "tools/launch/ephemeral_keys.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <unistd.h>

#include "absl/strings/str_cat.h"

namespace petrel {

absl::StatusOr<std::unique_ptr<EphemeralClusterKeys>>
EphemeralClusterKeys::Create(int num_servers, int num_workers) {
  std::unique_ptr<EphemeralClusterKeys> out(new EphemeralClusterKeys());
  const char* tmp = std::getenv("TMPDIR");
  std::string tmpl = absl::StrCat(tmp != nullptr && *tmp ? tmp : "/tmp",
                                  "/petrel-launch-keysXXXXXX");
  if (mkdtemp(tmpl.data()) == nullptr) {  // mode 0700
    return absl::UnavailableError(absl::StrCat(
        "cannot make a directory for the job's keys: ", std::strerror(errno)));
  }
  out->dir_ = tmpl;
  out->path_ = out->dir_ + "/authorized_keys";
  std::vector<std::pair<std::string, const char*>> children = {
      {"scheduler", "scheduler"}};
  for (int i = 0; i < num_servers; ++i) {
    children.push_back({absl::StrCat("server ", i), "server"});
  }
  for (int i = 0; i < num_workers; ++i) {
    children.push_back({absl::StrCat("worker ", i), "worker"});
  }
  std::string listed = "# petrel-launch: this job's keys, removed at its end\n";
  for (const auto& [name, role] : children) {
    absl::StatusOr<CurveKeyPair> keys = NewCurveKeyPair();
    if (!keys.ok()) return keys.status();
    std::string label = name;
    for (char& c : label) {
      if (c == ' ') c = '-';
    }
    absl::StrAppend(&listed, keys->public_key, " roles=", role, " name=", label,
                    "\n");
    if (name == "scheduler") out->scheduler_public_key_ = keys->public_key;
    out->keys_[name] = *std::move(keys);
  }
  FILE* f = std::fopen(out->path_.c_str(), "w");
  if (f == nullptr || std::fputs(listed.c_str(), f) < 0 ||
      std::fclose(f) != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot write ", out->path_, ": ", std::strerror(errno)));
  }
  return out;
}

EphemeralClusterKeys::~EphemeralClusterKeys() {
  if (!path_.empty()) unlink(path_.c_str());
  if (!dir_.empty()) rmdir(dir_.c_str());
}

std::vector<std::pair<std::string, std::string>> EphemeralClusterKeys::EnvFor(
    const std::string& name) const {
  auto it = keys_.find(name);
  if (it == keys_.end()) return {};
  return {{"PETREL_CURVE_SECRET_KEY", it->second.secret_key},
          {"PETREL_AUTHORIZED_KEYS", path_},
          {"PETREL_SCHEDULER_PUBLIC_KEY", scheduler_public_key_}};
}

}  // namespace petrel
