#include "security/authorized_keys.h"

#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

#include "security/curve_keys.h"

namespace petrel {
namespace {

constexpr struct {
  KeyRole role;
  const char* name;
} kRoleNames[] = {{kKeyRoleScheduler, "scheduler"},
                  {kKeyRoleServer, "server"},
                  {kKeyRoleWorker, "worker"},
                  {kKeyRoleAdmin, "admin"}};

absl::Status LineError(absl::string_view source, int line,
                       absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat(source, " line ", line, ": ", why));
}

}  // namespace

uint32_t KeyRoleOf(absl::string_view name) {
  for (const auto& r : kRoleNames) {
    if (name == r.name) return r.role;
  }
  return 0;
}

std::string KeyRolesString(uint32_t roles) {
  std::vector<absl::string_view> names;
  for (const auto& r : kRoleNames) {
    if (roles & r.role) names.push_back(r.name);
  }
  return absl::StrJoin(names, ",");
}

absl::StatusOr<uint32_t> ParseKeyRoles(absl::string_view list) {
  uint32_t roles = 0;
  for (absl::string_view name : absl::StrSplit(list, ',')) {
    const uint32_t bit = KeyRoleOf(name);
    if (bit == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown role '", name.substr(0, 32),
                       "' (roles are scheduler, server, worker and admin)"));
    }
    roles |= bit;
  }
  return roles;
}

absl::StatusOr<AuthorizedKeys> AuthorizedKeys::Parse(absl::string_view text,
                                                     absl::string_view source) {
  AuthorizedKeys out;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    std::vector<absl::string_view> words =
        absl::StrSplit(line, absl::ByAnyChar(" \t\r"), absl::SkipEmpty());
    if (words.empty()) continue;
    if (!IsZ85Key(words[0])) {
      if (words[0][0] == '#') continue;
      return LineError(source, line_no,
                       "does not start with a 40-character Z85 public key");
    }
    AuthorizedKey key;
    key.public_key = std::string(words[0]);
    for (size_t i = 1; i < words.size(); ++i) {
      absl::string_view w = words[i];
      if (absl::ConsumePrefix(&w, "roles=")) {
        absl::StatusOr<uint32_t> roles = ParseKeyRoles(w);
        if (!roles.ok()) {
          return LineError(source, line_no, roles.status().message());
        }
        key.roles |= *roles;
      } else if (absl::ConsumePrefix(&w, "name=")) {
        key.name = std::string(w);
      } else {
        return LineError(source, line_no,
                         absl::StrCat("unknown field '", w.substr(0, 32),
                                      "' (fields are roles= and name=)"));
      }
    }
    if (key.roles == 0) {
      return LineError(source, line_no,
                       "no roles= (e.g. roles=worker); a key without roles "
                       "would admit nobody");
    }
    if (out.keys_.contains(key.public_key)) {
      return LineError(source, line_no, "the key is listed twice");
    }
    out.keys_.emplace(key.public_key, std::move(key));
  }
  return out;
}

absl::StatusOr<AuthorizedKeys> AuthorizedKeys::Load(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": cannot read the authorized-keys file"));
  }
  std::stringstream text;
  text << in.rdbuf();
  return Parse(text.str(), path);
}

const AuthorizedKey* AuthorizedKeys::Find(absl::string_view public_key) const {
  auto it = keys_.find(public_key);
  return it == keys_.end() ? nullptr : &it->second;
}

absl::Status CompleteCurveOptions(bool is_scheduler, CurveOptions* curve) {
  if (!curve->enabled()) return absl::OkStatus();
  absl::StatusOr<AuthorizedKeys> keys =
      AuthorizedKeys::Load(curve->authorized_keys_path);
  if (!keys.ok()) return keys.status();
  if (is_scheduler || !curve->scheduler_public_key.empty()) {
    return absl::OkStatus();
  }
  std::vector<std::string> schedulers = keys->KeysWithRole(kKeyRoleScheduler);
  if (schedulers.size() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("no scheduler public key given (--scheduler_public_key or "
                     "PETREL_SCHEDULER_PUBLIC_KEY), and ",
                     curve->authorized_keys_path, " lists ", schedulers.size(),
                     " keys with role scheduler, not one"));
  }
  curve->scheduler_public_key = schedulers.front();
  return absl::OkStatus();
}

std::vector<std::string> AuthorizedKeys::KeysWithRole(KeyRole role) const {
  std::vector<std::string> out;
  for (const auto& [key, entry] : keys_) {
    if (entry.roles & role) out.push_back(key);
  }
  return out;
}

}  // namespace petrel
