// petrel-keygen: makes a CURVE keypair for one Petrel node (or petrelctl)
// and prints the line to add to the cluster's authorized-keys file
// (docs/security.md).
//
//   petrel-keygen --out=keys/server0 --roles=server [--name=server0]
//
// writes keys/server0.key (the secret key, mode 0600) and keys/server0.pub
// (the public key), never overwriting a file, and prints
//
//   <public key> roles=server name=server0
//
// Exit status: 0 on success, 2 for bad flags or a file that exists or
// cannot be written.
#include <cstdio>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "gflags/gflags.h"

#include "base/cli.h"
#include "base/flag_check.h"
#include "security/authorized_keys.h"
#include "security/curve_keys.h"

DEFINE_string(out, "",
              "Path prefix of the files to write: PREFIX.key (secret, mode "
              "0600) and PREFIX.pub. Required; existing files are never "
              "overwritten.");
DEFINE_string(roles, "worker",
              "Comma-separated roles the key may take: scheduler, server, "
              "worker, admin. Default worker.");
DEFINE_string(name, "",
              "Name recorded in the authorized-keys line (letters, digits, "
              "._-). Default: the last component of --out.");

namespace {

int Fail(const std::string& message) {
  std::fprintf(stderr, "petrel-keygen: %s\n", message.c_str());
  return 2;
}

bool IsName(const std::string& name) {
  if (name.empty()) return false;
  for (char c : name) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '.' &&
        c != '_' && c != '-') {
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  petrel::CliOptions cli;
  cli.name = "petrel-keygen";
  cli.usage =
      "writes a CURVE keypair to PREFIX.key and PREFIX.pub and prints its\n"
      "authorized-keys line (docs/security.md).\n"
      "  petrel-keygen --out=PREFIX [--roles=worker] [--name=NAME]";
  if (int code = petrel::ParseCommandLine(cli, &argc, &argv); code >= 0) {
    return code;
  }
  if (FLAGS_out.empty()) return Fail("--out is required (see --help)");
  absl::StatusOr<uint32_t> roles = petrel::ParseKeyRoles(FLAGS_roles);
  if (!roles.ok()) {
    return Fail(absl::StrCat("--roles: ", roles.status().message()));
  }
  std::string name = FLAGS_name;
  if (name.empty()) name = FLAGS_out.substr(FLAGS_out.rfind('/') + 1);
  if (!IsName(name)) {
    return Fail(absl::StrCat("--name: '", name,
                             "' is not a name (letters, digits, . _ -)"));
  }
  absl::StatusOr<petrel::CurveKeyPair> keys = petrel::NewCurveKeyPair();
  if (!keys.ok()) return Fail(std::string(keys.status().message()));
  const std::string line =
      absl::StrCat(keys->public_key, " roles=", petrel::KeyRolesString(*roles),
                   " name=", name);
  const std::string secret_path = FLAGS_out + ".key";
  const std::string public_path = FLAGS_out + ".pub";
  absl::Status s = petrel::WriteKeyFile(
      secret_path, keys->secret_key,
      absl::StrCat("Petrel CURVE secret key of ", name,
                   ". Keep it secret: mode 0600, never share it.\npublic key: ",
                   keys->public_key),
      /*secret=*/true);
  if (s.ok()) {
    s = petrel::WriteKeyFile(
        public_path, keys->public_key,
        absl::StrCat("Petrel CURVE public key of ", name,
                     ". Its authorized-keys line:\n", line),
        /*secret=*/false);
    if (!s.ok()) std::remove(secret_path.c_str());
  }
  if (!s.ok()) return Fail(std::string(s.message()));
  std::fprintf(stderr,
               "petrel-keygen: wrote %s and %s; add this line to the "
               "authorized-keys file:\n",
               secret_path.c_str(), public_path.c_str());
  std::printf("%s\n", line.c_str());
  return 0;
}
