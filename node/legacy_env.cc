#include "node/legacy_env.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace petrel {
namespace {

std::optional<std::string> GetString(
    const std::function<const char*(const char*)>& getenv, const char* name) {
  const char* v = getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

absl::Status GetInt(const std::function<const char*(const char*)>& getenv,
                    const char* name, std::optional<int>* out) {
  std::optional<std::string> s = GetString(getenv, name);
  if (!s.has_value()) return absl::OkStatus();
  int v;
  if (!absl::SimpleAtoi(*s, &v) || v < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, "='", *s, "' is not a non-negative integer"));
  }
  *out = v;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<LegacyEnv> ReadLegacyEnv(
    const std::function<const char*(const char*)>& getenv) {
  LegacyEnv env;
  env.role = GetString(getenv, "DMLC_ROLE");
  env.root_uri = GetString(getenv, "DMLC_PS_ROOT_URI");
  env.node_host = GetString(getenv, "DMLC_NODE_HOST");
  env.interface_name = GetString(getenv, "DMLC_INTERFACE");
  for (auto [name, field] : {std::pair{"DMLC_PS_ROOT_PORT", &env.root_port},
                             std::pair{"DMLC_NUM_SERVER", &env.num_server},
                             std::pair{"DMLC_NUM_WORKER", &env.num_worker},
                             std::pair{"DMLC_PORT", &env.port}}) {
    absl::Status s = GetInt(getenv, name, field);
    if (!s.ok()) return s;
  }
  if (env.role.has_value() && *env.role != "scheduler" &&
      *env.role != "server" && *env.role != "worker") {
    return absl::InvalidArgumentError(absl::StrCat(
        "DMLC_ROLE='", *env.role, "' is not scheduler, server or worker"));
  }
  return env;
}

}  // namespace petrel
