#include "security/curve_keys.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace petrel {
namespace {

absl::Status Invalid(absl::string_view what, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(what, ": ", why));
}

// The value of a setting given by flag or, failing that, by environment.
struct Given {
  std::string value;
  std::string name;  // "--flag" or "VARIABLE", for messages
};

Given Pick(const std::string& flag_value, const char* flag,
           const std::string& env_value, const char* env) {
  if (!flag_value.empty()) return {flag_value, absl::StrCat("--", flag)};
  if (!env_value.empty()) return {env_value, env};
  return {};
}

absl::Status SetKeyOption(void* socket, int option, absl::string_view key,
                          absl::string_view what) {
  if (!IsZ85Key(key)) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " is not a 40-character Z85 CURVE key"));
  }
  // The 41-byte form (40 characters and a NUL) is read as Z85.
  std::string z85(key);
  if (zmq_setsockopt(socket, option, z85.c_str(), z85.size() + 1) != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot set ", what, ": ", zmq_strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace

bool IsZ85Key(absl::string_view key) {
  if (key.size() != kZ85KeyLength) return false;
  std::string z85(key);
  uint8_t raw[32];
  return zmq_z85_decode(raw, z85.c_str()) != nullptr;
}

absl::StatusOr<CurveKeyPair> NewCurveKeyPair() {
  char pub[kZ85KeyLength + 1];
  char sec[kZ85KeyLength + 1];
  if (zmq_curve_keypair(pub, sec) != 0) {
    return absl::UnavailableError(absl::StrCat(
        "cannot make a CURVE keypair (ZeroMQ built without CURVE?): ",
        zmq_strerror(errno)));
  }
  return CurveKeyPair{pub, sec};
}

absl::StatusOr<std::string> PublicKeyOf(absl::string_view secret_key) {
  if (!IsZ85Key(secret_key)) {
    return absl::InvalidArgumentError("not a 40-character Z85 CURVE key");
  }
  std::string sec(secret_key);
  char pub[kZ85KeyLength + 1];
  if (zmq_curve_public(pub, sec.c_str()) != 0) {
    return absl::UnavailableError(absl::StrCat(
        "cannot derive a CURVE public key: ", zmq_strerror(errno)));
  }
  return std::string(pub);
}

absl::StatusOr<std::string> ReadKeyFile(const std::string& path, bool secret) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    return Invalid(
        path, absl::StrCat("cannot read key file: ", std::strerror(errno)));
  }
  if (secret && (st.st_mode & 077) != 0) {
    return Invalid(path,
                   absl::StrFormat("secret key file is accessible to group or "
                                   "others (mode %04o); run chmod 600 on it",
                                   st.st_mode & 07777));
  }
  std::ifstream in(path);
  if (!in) return Invalid(path, "cannot open key file");
  std::vector<std::string> keys;
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    absl::string_view text = absl::StripAsciiWhitespace(line);
    if (text.empty()) continue;
    if (IsZ85Key(text)) {
      keys.emplace_back(text);
      continue;
    }
    if (text[0] == '#') continue;
    return Invalid(path, absl::StrCat("line ", line_no,
                                      " is neither a 40-character Z85 key nor "
                                      "a comment (#)"));
  }
  if (keys.size() != 1) {
    return Invalid(path, absl::StrCat("holds ", keys.size(),
                                      " keys; a key file holds exactly one"));
  }
  return keys.front();
}

absl::Status WriteKeyFile(const std::string& path, absl::string_view key,
                          absl::string_view comment, bool secret) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
                      secret ? 0600 : 0644);
  if (fd < 0) {
    if (errno == EEXIST) {
      return absl::AlreadyExistsError(
          absl::StrCat(path, " exists; it is never overwritten"));
    }
    return Invalid(path, std::strerror(errno));
  }
  std::string text;
  for (absl::string_view c : absl::StrSplit(comment, '\n', absl::SkipEmpty())) {
    absl::StrAppend(&text, "# ", c, "\n");
  }
  absl::StrAppend(&text, key, "\n");
  // The umask may have cleared bits; a secret file is exactly 0600.
  const bool ok = fchmod(fd, secret ? 0600 : 0644) == 0 &&
                  write(fd, text.data(), text.size()) ==
                      static_cast<ssize_t>(text.size()) &&
                  fsync(fd) == 0;
  const int err = errno;
  close(fd);
  if (!ok) return Invalid(path, std::strerror(err));
  return absl::OkStatus();
}

void ReadCurveKeyEnvironment(
    const std::function<const char*(const char*)>& get_env,
    CurveKeySources* sources) {
  auto read = [&](const char* name) {
    const char* v = get_env(name);
    return std::string(v == nullptr ? "" : v);
  };
  sources->env_secret_key = read("PETREL_CURVE_SECRET_KEY");
  sources->env_public_key = read("PETREL_CURVE_PUBLIC_KEY");
  sources->env_authorized_keys = read("PETREL_AUTHORIZED_KEYS");
  sources->env_scheduler_public_key = read("PETREL_SCHEDULER_PUBLIC_KEY");
}

namespace {

// The public key given beside the secret key (a file, else the
// environment), which must be the secret key's `derived` one.
absl::Status CheckGivenPublicKey(const Given& file, const Given& env,
                                 const std::string& derived) {
  std::string given;
  std::string name;
  if (!file.value.empty()) {
    absl::StatusOr<std::string> key = ReadKeyFile(file.value, /*secret=*/false);
    if (!key.ok()) return Invalid(file.name, key.status().message());
    given = *key;
    name = file.name;
  } else if (!env.value.empty()) {
    given = std::string(absl::StripAsciiWhitespace(env.value));
    name = env.name;
  }
  if (!given.empty() && given != derived) {
    return Invalid(name,
                   "is not the public key of the secret key given (leave it "
                   "out: it is derived from the secret key)");
  }
  return absl::OkStatus();
}

// The scheduler's public key: a Z85 key, or the file that holds one.
absl::StatusOr<std::string> SchedulerKeyOf(const Given& scheduler) {
  std::string key(absl::StripAsciiWhitespace(scheduler.value));
  if (IsZ85Key(key)) return key;
  absl::StatusOr<std::string> from_file =
      ReadKeyFile(scheduler.value, /*secret=*/false);
  if (!from_file.ok()) {
    return Invalid(scheduler.name,
                   absl::StrCat("neither a 40-character Z85 key nor a "
                                "key file (",
                                from_file.status().message(), ")"));
  }
  return *from_file;
}

}  // namespace

absl::StatusOr<CurveOptions> LoadCurveOptions(const CurveKeySources& s) {
  const Given secret_file =
      Pick(s.secret_key_file, "curve_secret_key_file", "", "");
  const Given secret_env =
      Pick("", "", s.env_secret_key, "PETREL_CURVE_SECRET_KEY");
  const Given public_file =
      Pick(s.public_key_file, "curve_public_key_file", "", "");
  const Given public_env =
      Pick("", "", s.env_public_key, "PETREL_CURVE_PUBLIC_KEY");
  const Given authorized =
      Pick(s.authorized_keys_path, "authorized_keys", s.env_authorized_keys,
           "PETREL_AUTHORIZED_KEYS");
  const Given scheduler =
      Pick(s.scheduler_public_key, "scheduler_public_key",
           s.env_scheduler_public_key, "PETREL_SCHEDULER_PUBLIC_KEY");
  CurveOptions out;
  if (secret_file.value.empty() && secret_env.value.empty()) {
    for (const Given* g :
         {&public_file, &public_env, &authorized, &scheduler}) {
      if (!g->value.empty()) {
        return Invalid(g->name,
                       "given without a secret key; pass "
                       "--curve_secret_key_file (or PETREL_CURVE_SECRET_KEY) "
                       "too, or leave the cluster open without any key");
      }
    }
    return out;  // open cluster
  }
  if (!secret_file.value.empty()) {
    absl::StatusOr<std::string> key =
        ReadKeyFile(secret_file.value, /*secret=*/true);
    if (!key.ok()) return Invalid(secret_file.name, key.status().message());
    out.keys.secret_key = *key;
  } else {
    out.keys.secret_key =
        std::string(absl::StripAsciiWhitespace(secret_env.value));
    if (!IsZ85Key(out.keys.secret_key)) {
      return Invalid(secret_env.name, "is not a 40-character Z85 CURVE key");
    }
  }
  absl::StatusOr<std::string> derived = PublicKeyOf(out.keys.secret_key);
  if (!derived.ok()) return derived.status();
  out.keys.public_key = *derived;
  if (absl::Status s =
          CheckGivenPublicKey(public_file, public_env, out.keys.public_key);
      !s.ok()) {
    return s;
  }
  if (authorized.value.empty()) {
    return Invalid("--authorized_keys",
                   "required with a secret key: the file of public keys this "
                   "node admits (see docs/security.md)");
  }
  out.authorized_keys_path = authorized.value;
  if (!scheduler.value.empty()) {
    absl::StatusOr<std::string> key = SchedulerKeyOf(scheduler);
    if (!key.ok()) return key.status();
    out.scheduler_public_key = *key;
  }
  return out;
}

absl::Status ConfigureCurveServer(void* socket, const CurveKeyPair& keys) {
  const int one = 1;
  if (zmq_setsockopt(socket, ZMQ_CURVE_SERVER, &one, sizeof(one)) != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot make a CURVE server: ", zmq_strerror(errno)));
  }
  return SetKeyOption(socket, ZMQ_CURVE_SECRETKEY, keys.secret_key,
                      "the secret key");
}

absl::Status ConfigureCurveClient(void* socket, const CurveKeyPair& keys,
                                  absl::string_view server_public_key) {
  if (absl::Status s = SetKeyOption(socket, ZMQ_CURVE_SERVERKEY,
                                    server_public_key, "the peer's public key");
      !s.ok()) {
    return s;
  }
  if (absl::Status s = SetKeyOption(socket, ZMQ_CURVE_PUBLICKEY,
                                    keys.public_key, "the public key");
      !s.ok()) {
    return s;
  }
  return SetKeyOption(socket, ZMQ_CURVE_SECRETKEY, keys.secret_key,
                      "the secret key");
}

}  // namespace petrel
