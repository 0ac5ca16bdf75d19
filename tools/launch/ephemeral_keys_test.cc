#include "tools/launch/ephemeral_keys.h"

#include <string>

#include <unistd.h>

#include "gtest/gtest.h"

#include "security/authorized_keys.h"

namespace petrel {
namespace {

TEST(EphemeralClusterKeysTest, GivesEveryChildItsKeyAndRemovesTheFile) {
  std::string path;
  {
    absl::StatusOr<std::unique_ptr<EphemeralClusterKeys>> keys =
        EphemeralClusterKeys::Create(1, 2);
    ASSERT_TRUE(keys.ok()) << keys.status();
    path = (*keys)->authorized_keys_path();
    absl::StatusOr<AuthorizedKeys> listed = AuthorizedKeys::Load(path);
    ASSERT_TRUE(listed.ok()) << listed.status();
    EXPECT_EQ(listed->size(), 4u);
    std::string scheduler_key;
    for (const char* name : {"scheduler", "server 0", "worker 0", "worker 1"}) {
      auto env = (*keys)->EnvFor(name);
      ASSERT_EQ(env.size(), 3u) << name;
      EXPECT_EQ(env[0].first, "PETREL_CURVE_SECRET_KEY");
      const std::string pub = PublicKeyOf(env[0].second).value();
      const AuthorizedKey* entry = listed->Find(pub);
      ASSERT_NE(entry, nullptr) << name;
      const uint32_t role = std::string(name) == "scheduler" ? kKeyRoleScheduler
                            : name[1] == 'e'                 ? kKeyRoleServer
                                                             : kKeyRoleWorker;
      EXPECT_EQ(entry->roles, role) << name;
      EXPECT_EQ(env[1].second, path);
      if (scheduler_key.empty()) scheduler_key = pub;
      EXPECT_EQ(env[2].second, scheduler_key);
    }
    EXPECT_TRUE((*keys)->EnvFor("worker 2").empty());
  }
  EXPECT_NE(access(path.c_str(), F_OK), 0);
}

}  // namespace
}  // namespace petrel
