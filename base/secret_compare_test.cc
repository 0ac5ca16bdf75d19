#include "base/secret_compare.h"

#include <string>

#include "gtest/gtest.h"

namespace petrel {
namespace {

TEST(SecretsEqualTest, EqualSecretsMatch) {
  EXPECT_TRUE(SecretsEqual("s3cret-token", "s3cret-token"));
  EXPECT_TRUE(SecretsEqual("", ""));
}

TEST(SecretsEqualTest, DifferentBytesDoNotMatch) {
  EXPECT_FALSE(SecretsEqual("s3cret-token", "s3cret-tokeN"));
  EXPECT_FALSE(SecretsEqual("X3cret-token", "s3cret-token"));
}

TEST(SecretsEqualTest, DifferentLengthsDoNotMatch) {
  EXPECT_FALSE(SecretsEqual("abc", "abcd"));
  EXPECT_FALSE(SecretsEqual("abcd", "abc"));
  // A prefix, or the expected secret repeated, is not the secret.
  EXPECT_FALSE(SecretsEqual("abcabc", "abc"));
  EXPECT_FALSE(SecretsEqual("", "abc"));
  EXPECT_FALSE(SecretsEqual("abc", ""));
}

TEST(SecretsEqualTest, EmbeddedNulBytesCount) {
  const std::string a("ab\0c", 4);
  const std::string b("ab\0d", 4);
  EXPECT_TRUE(SecretsEqual(a, a));
  EXPECT_FALSE(SecretsEqual(a, b));
  EXPECT_FALSE(SecretsEqual(a, "ab"));
}

}  // namespace
}  // namespace petrel
