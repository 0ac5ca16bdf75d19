#include "node/legacy_env.h"

#include <map>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace petrel {
namespace {

using ::testing::HasSubstr;

// Reads the variables from `vars` instead of the process environment.
absl::StatusOr<LegacyEnv> Read(const std::map<std::string, std::string>& vars) {
  return ReadLegacyEnv([&vars](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}

TEST(LegacyEnvTest, UnsetVariablesStayUnset) {
  auto env = Read({});
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_FALSE(env->role.has_value());
  EXPECT_FALSE(env->root_uri.has_value());
  EXPECT_FALSE(env->root_port.has_value());
  EXPECT_FALSE(env->num_server.has_value());
  EXPECT_FALSE(env->num_worker.has_value());
  EXPECT_FALSE(env->node_host.has_value());
  EXPECT_FALSE(env->interface_name.has_value());
  EXPECT_FALSE(env->port.has_value());
}

TEST(LegacyEnvTest, ReadsEveryVariable) {
  auto env = Read({{"DMLC_ROLE", "server"},
                   {"DMLC_PS_ROOT_URI", "10.0.0.1"},
                   {"DMLC_PS_ROOT_PORT", "9091"},
                   {"DMLC_NUM_SERVER", "3"},
                   {"DMLC_NUM_WORKER", "5"},
                   {"DMLC_NODE_HOST", "10.0.0.7"},
                   {"DMLC_INTERFACE", "eth1"},
                   {"DMLC_PORT", "7000"}});
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_EQ(env->role, "server");
  EXPECT_EQ(env->root_uri, "10.0.0.1");
  EXPECT_EQ(env->root_port, 9091);
  EXPECT_EQ(env->num_server, 3);
  EXPECT_EQ(env->num_worker, 5);
  EXPECT_EQ(env->node_host, "10.0.0.7");
  EXPECT_EQ(env->interface_name, "eth1");
  EXPECT_EQ(env->port, 7000);
}

TEST(LegacyEnvTest, EachVariableAlone) {
  EXPECT_EQ(Read({{"DMLC_ROLE", "worker"}})->role, "worker");
  EXPECT_EQ(Read({{"DMLC_ROLE", "scheduler"}})->role, "scheduler");
  EXPECT_EQ(Read({{"DMLC_PS_ROOT_URI", "h"}})->root_uri, "h");
  EXPECT_EQ(Read({{"DMLC_PS_ROOT_PORT", "1"}})->root_port, 1);
  EXPECT_EQ(Read({{"DMLC_NUM_SERVER", "2"}})->num_server, 2);
  EXPECT_EQ(Read({{"DMLC_NUM_WORKER", "0"}})->num_worker, 0);
  EXPECT_EQ(Read({{"DMLC_NODE_HOST", "n"}})->node_host, "n");
  EXPECT_EQ(Read({{"DMLC_INTERFACE", "lo"}})->interface_name, "lo");
  EXPECT_EQ(Read({{"DMLC_PORT", "0"}})->port, 0);
}

TEST(LegacyEnvTest, EmptyVariableCountsAsUnset) {
  auto env = Read({{"DMLC_ROLE", ""}, {"DMLC_PORT", ""}});
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_FALSE(env->role.has_value());
  EXPECT_FALSE(env->port.has_value());
}

TEST(LegacyEnvTest, RejectsBadNumbersNamingTheVariable) {
  for (const char* name : {"DMLC_PS_ROOT_PORT", "DMLC_NUM_SERVER",
                           "DMLC_NUM_WORKER", "DMLC_PORT"}) {
    for (const char* value : {"abc", "12x", "-1", "99999999999", "1.5"}) {
      auto env = Read({{name, value}});
      ASSERT_FALSE(env.ok()) << name << "=" << value;
      EXPECT_EQ(env.status().code(), absl::StatusCode::kInvalidArgument);
      EXPECT_THAT(env.status().message(), HasSubstr(name));
      EXPECT_THAT(env.status().message(), HasSubstr(value));
    }
  }
}

TEST(LegacyEnvTest, RejectsBadRoleNamingTheVariable) {
  auto env = Read({{"DMLC_ROLE", "master"}});
  ASSERT_FALSE(env.ok());
  EXPECT_EQ(env.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(env.status().message(), HasSubstr("DMLC_ROLE"));
  EXPECT_THAT(env.status().message(), HasSubstr("master"));
}

}  // namespace
}  // namespace petrel
