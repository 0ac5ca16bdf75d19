#include "security/authorized_keys.h"

#include <fstream>
#include <string>

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "security/curve_keys.h"

namespace petrel {
namespace {

using ::testing::HasSubstr;

std::string Key() { return NewCurveKeyPair().value().public_key; }

TEST(AuthorizedKeysTest, ParsesKeysRolesNamesAndComments) {
  const std::string a = Key(), b = Key();
  const std::string text = absl::StrCat(
      "# the cluster's keys\n\n", a, " roles=server,worker name=node-a\n  ", b,
      "\troles=scheduler roles=admin\n#", Key(), " roles=worker\n");
  absl::StatusOr<AuthorizedKeys> keys = AuthorizedKeys::Parse(text, "ak");
  ASSERT_TRUE(keys.ok()) << keys.status();
  EXPECT_EQ(keys->size(), 2u);  // the commented-out key does not count
  const AuthorizedKey* ka = keys->Find(a);
  ASSERT_NE(ka, nullptr);
  EXPECT_EQ(ka->roles, kKeyRoleServer | kKeyRoleWorker);
  EXPECT_EQ(ka->name, "node-a");
  const AuthorizedKey* kb = keys->Find(b);
  ASSERT_NE(kb, nullptr);
  EXPECT_EQ(KeyRolesString(kb->roles), "scheduler,admin");
  EXPECT_EQ(keys->Find(Key()), nullptr);
  EXPECT_EQ(keys->KeysWithRole(kKeyRoleScheduler), std::vector<std::string>{b});
}

TEST(AuthorizedKeysTest, RejectsMalformedLinesNamingTheLine) {
  const std::string a = Key();
  struct Case {
    std::string text;
    std::string message;
  } cases[] = {
      {"not-a-key roles=worker", "ak line 1: does not start"},
      {absl::StrCat("\n", a), "ak line 2: no roles="},
      {absl::StrCat(a, " roles=wizard"), "unknown role 'wizard'"},
      {absl::StrCat(a, " roles="), "unknown role ''"},
      {absl::StrCat(a, " role=worker"), "unknown field 'role=worker'"},
      {absl::StrCat(a, " roles=worker\n", a, " roles=server"),
       "line 2: the key is listed twice"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<AuthorizedKeys> keys = AuthorizedKeys::Parse(c.text, "ak");
    ASSERT_TRUE(absl::IsInvalidArgument(keys.status())) << c.text;
    EXPECT_THAT(keys.status().message(), HasSubstr(c.message)) << c.text;
  }
  EXPECT_FALSE(AuthorizedKeys::Load("/nonexistent/authorized_keys").ok());
}

TEST(AuthorizedKeysTest, RoleListsRoundTrip) {
  EXPECT_EQ(ParseKeyRoles("worker,server").value(),
            kKeyRoleServer | kKeyRoleWorker);
  EXPECT_EQ(KeyRolesString(kKeyRoleAdmin | kKeyRoleScheduler),
            "scheduler,admin");
  EXPECT_FALSE(ParseKeyRoles("").ok());
  EXPECT_EQ(KeyRoleOf("admin"), kKeyRoleAdmin);
  EXPECT_EQ(KeyRoleOf("root"), 0u);
}

TEST(AuthorizedKeysTest, CompletesTheSchedulerKeyFromTheFile) {
  char path[] = "/tmp/petrel_ak_testXXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  const std::string scheduler = Key(), other = Key();
  auto write = [&](const std::string& text) { std::ofstream(path) << text; };
  CurveOptions curve;
  curve.keys = NewCurveKeyPair().value();
  curve.authorized_keys_path = path;
  write(
      absl::StrCat(scheduler, " roles=scheduler\n", other, " roles=worker\n"));
  CurveOptions node = curve;
  ASSERT_TRUE(CompleteCurveOptions(false, &node).ok());
  EXPECT_EQ(node.scheduler_public_key, scheduler);

  write(absl::StrCat(scheduler, " roles=scheduler\n", other,
                     " roles=scheduler\n"));
  node = curve;
  absl::Status two = CompleteCurveOptions(false, &node);
  EXPECT_THAT(two.message(), HasSubstr("lists 2 keys with role scheduler"));
  node.scheduler_public_key = other;  // given: no need to pick
  EXPECT_TRUE(CompleteCurveOptions(false, &node).ok());
  EXPECT_EQ(node.scheduler_public_key, other);
  EXPECT_TRUE(CompleteCurveOptions(true, &curve).ok());

  write("garbage\n");
  EXPECT_TRUE(absl::IsInvalidArgument(CompleteCurveOptions(true, &curve)));
  CurveOptions open;  // CURVE off: nothing to check
  EXPECT_TRUE(CompleteCurveOptions(false, &open).ok());
  unlink(path);
}

}  // namespace
}  // namespace petrel
