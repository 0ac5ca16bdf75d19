#include "security/curve_keys.h"

#include <cstdio>
#include <fstream>
#include <map>
#include <string>

#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace petrel {
namespace {

using ::testing::HasSubstr;

class CurveKeysTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/petrel_curve_keys_testXXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    for (const std::string& f : files_) unlink(f.c_str());
    rmdir(dir_.c_str());
  }
  std::string Path(const std::string& name) {
    files_.push_back(absl::StrCat(dir_, "/", name));
    return files_.back();
  }
  std::string Write(const std::string& name, const std::string& text,
                    mode_t mode) {
    std::string path = Path(name);
    std::ofstream(path) << text;
    chmod(path.c_str(), mode);
    return path;
  }

  std::string dir_;
  std::vector<std::string> files_;
};

TEST_F(CurveKeysTest, NewKeyPairIsZ85AndPublicKeyDerives) {
  absl::StatusOr<CurveKeyPair> keys = NewCurveKeyPair();
  ASSERT_TRUE(keys.ok()) << keys.status();
  EXPECT_TRUE(IsZ85Key(keys->public_key));
  EXPECT_TRUE(IsZ85Key(keys->secret_key));
  absl::StatusOr<std::string> pub = PublicKeyOf(keys->secret_key);
  ASSERT_TRUE(pub.ok());
  EXPECT_EQ(*pub, keys->public_key);
  EXPECT_FALSE(IsZ85Key("short"));
  EXPECT_FALSE(IsZ85Key(std::string(40, ' ')));
  EXPECT_FALSE(PublicKeyOf("not a key").ok());
}

TEST_F(CurveKeysTest, WritesSecretFile0600AndReadsItBack) {
  CurveKeyPair keys = NewCurveKeyPair().value();
  const std::string path = Path("node.key");
  ASSERT_TRUE(
      WriteKeyFile(path, keys.secret_key, "secret\nof node", true).ok());
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600);
  absl::StatusOr<std::string> read = ReadKeyFile(path, /*secret=*/true);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, keys.secret_key);
  absl::Status again = WriteKeyFile(path, keys.secret_key, "", true);
  EXPECT_TRUE(absl::IsAlreadyExists(again)) << again;
}

TEST_F(CurveKeysTest, RefusesSecretFileReadableByOthersNamingIt) {
  CurveKeyPair keys = NewCurveKeyPair().value();
  const std::string path = Write("open.key", keys.secret_key + "\n", 0644);
  absl::StatusOr<std::string> read = ReadKeyFile(path, /*secret=*/true);
  ASSERT_TRUE(absl::IsInvalidArgument(read.status())) << read.status();
  EXPECT_THAT(read.status().message(), HasSubstr(path));
  EXPECT_THAT(read.status().message(), HasSubstr("chmod 600"));
  // A public key file may be readable by all.
  EXPECT_TRUE(ReadKeyFile(path, /*secret=*/false).ok());
}

TEST_F(CurveKeysTest, KeyFileRejectsGarbageAndTwoKeys) {
  CurveKeyPair a = NewCurveKeyPair().value();
  CurveKeyPair b = NewCurveKeyPair().value();
  EXPECT_THAT(
      ReadKeyFile(Write("two.pub", a.public_key + "\n" + b.public_key, 0644),
                  false)
          .status()
          .message(),
      HasSubstr("holds 2 keys"));
  EXPECT_THAT(ReadKeyFile(Write("junk.pub", "hello world\n", 0644), false)
                  .status()
                  .message(),
              HasSubstr("line 1"));
  EXPECT_FALSE(ReadKeyFile(Path("missing.pub"), false).ok());
  // Comments and blank lines are fine.
  EXPECT_TRUE(
      ReadKeyFile(Write("c.pub", "# a comment\n\n" + a.public_key, 0644), false)
          .ok());
}

TEST_F(CurveKeysTest, LoadsFromFlagsOrEnvironment) {
  CurveKeyPair keys = NewCurveKeyPair().value();
  CurveKeyPair sched = NewCurveKeyPair().value();
  CurveKeySources none;
  absl::StatusOr<CurveOptions> open = LoadCurveOptions(none);
  ASSERT_TRUE(open.ok());
  EXPECT_FALSE(open->enabled());

  CurveKeySources env;
  env.env_secret_key = keys.secret_key;
  env.env_authorized_keys = "/some/authorized_keys";
  env.env_scheduler_public_key = sched.public_key;
  absl::StatusOr<CurveOptions> from_env = LoadCurveOptions(env);
  ASSERT_TRUE(from_env.ok()) << from_env.status();
  EXPECT_TRUE(from_env->enabled());
  EXPECT_EQ(from_env->keys.public_key, keys.public_key);
  EXPECT_EQ(from_env->authorized_keys_path, "/some/authorized_keys");
  EXPECT_EQ(from_env->scheduler_public_key, sched.public_key);

  CurveKeySources flags;
  flags.secret_key_file = Write("n.key", keys.secret_key, 0600);
  flags.public_key_file = Write("n.pub", keys.public_key, 0644);
  flags.authorized_keys_path = "/flag/keys";
  flags.env_authorized_keys = "/env/keys";
  flags.scheduler_public_key = Write("s.pub", sched.public_key, 0644);
  absl::StatusOr<CurveOptions> from_flags = LoadCurveOptions(flags);
  ASSERT_TRUE(from_flags.ok()) << from_flags.status();
  EXPECT_EQ(from_flags->keys.secret_key, keys.secret_key);
  EXPECT_EQ(from_flags->authorized_keys_path, "/flag/keys");  // flag wins
  EXPECT_EQ(from_flags->scheduler_public_key, sched.public_key);
}

TEST_F(CurveKeysTest, LoadRefusesInconsistentSettings) {
  CurveKeyPair keys = NewCurveKeyPair().value();
  CurveKeyPair other = NewCurveKeyPair().value();
  CurveKeySources no_secret;
  no_secret.authorized_keys_path = "/x";
  EXPECT_THAT(LoadCurveOptions(no_secret).status().message(),
              HasSubstr("--authorized_keys"));

  CurveKeySources no_authorized;
  no_authorized.env_secret_key = keys.secret_key;
  EXPECT_THAT(LoadCurveOptions(no_authorized).status().message(),
              HasSubstr("--authorized_keys"));

  CurveKeySources mismatch;
  mismatch.env_secret_key = keys.secret_key;
  mismatch.env_public_key = other.public_key;
  mismatch.authorized_keys_path = "/x";
  EXPECT_THAT(LoadCurveOptions(mismatch).status().message(),
              HasSubstr("PETREL_CURVE_PUBLIC_KEY"));

  CurveKeySources open_file;
  open_file.secret_key_file = Write("o.key", keys.secret_key, 0640);
  open_file.authorized_keys_path = "/x";
  absl::Status s = LoadCurveOptions(open_file).status();
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_THAT(s.message(), HasSubstr("--curve_secret_key_file"));
  EXPECT_THAT(s.message(), HasSubstr(open_file.secret_key_file));

  CurveKeySources bad_env;
  bad_env.env_secret_key = "not-a-key";
  bad_env.authorized_keys_path = "/x";
  EXPECT_THAT(LoadCurveOptions(bad_env).status().message(),
              HasSubstr("PETREL_CURVE_SECRET_KEY"));
}

// The variables petrel-launch --curve and Kubernetes Secrets set, read
// into the env_* fields (unset: empty) and nothing else touched.
TEST(CurveKeyEnvironmentTest, ReadsTheKeyVariables) {
  const std::map<std::string, std::string> env = {
      {"PETREL_CURVE_SECRET_KEY", "secret"},
      {"PETREL_AUTHORIZED_KEYS", "/etc/petrel/keys"},
      {"PETREL_SCHEDULER_PUBLIC_KEY", "scheduler"}};
  CurveKeySources sources;
  sources.secret_key_file = "from-flag";
  ReadCurveKeyEnvironment(
      [&](const char* name) -> const char* {
        auto it = env.find(name);
        return it == env.end() ? nullptr : it->second.c_str();
      },
      &sources);
  EXPECT_EQ(sources.env_secret_key, "secret");
  EXPECT_EQ(sources.env_public_key, "");
  EXPECT_EQ(sources.env_authorized_keys, "/etc/petrel/keys");
  EXPECT_EQ(sources.env_scheduler_public_key, "scheduler");
  EXPECT_EQ(sources.secret_key_file, "from-flag");
}

}  // namespace
}  // namespace petrel
