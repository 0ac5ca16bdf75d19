#include "pslite/node_environment.h"

#include <map>
#include <string>

#include "gtest/gtest.h"

namespace petrel {
namespace pslite {
namespace {

using Vars = std::map<std::string, std::string>;

absl::StatusOr<PsLiteSettings> From(const Vars& vars) {
  return SettingsFromEnvironment([&vars](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}

TEST(NodeEnvironmentTest, ReadsPsLitesVariables) {
  absl::StatusOr<PsLiteSettings> s = From({{"DMLC_ROLE", "worker"},
                                           {"DMLC_PS_ROOT_URI", "127.0.0.1"},
                                           {"DMLC_PS_ROOT_PORT", "9123"},
                                           {"DMLC_NUM_SERVER", "2"},
                                           {"DMLC_NUM_WORKER", "3"},
                                           {"DMLC_NODE_HOST", "127.0.0.2"}});
  ASSERT_TRUE(s.ok()) << s.status();
  const PostofficeOptions& po = s->node.postoffice;
  EXPECT_EQ(po.role, pb::ROLE_WORKER);
  EXPECT_EQ(po.scheduler_host, "127.0.0.1");
  EXPECT_EQ(po.scheduler_port, 9123);
  EXPECT_EQ(po.num_servers, 2);
  EXPECT_EQ(po.num_workers, 3);
  EXPECT_TRUE(po.num_servers_given);
  EXPECT_EQ(po.advertise_host, "127.0.0.2");
  EXPECT_EQ(s->node.van.port, 0);
  EXPECT_EQ(s->replicas, 1);
}

TEST(NodeEnvironmentTest, TheSchedulerBindsTheRootPort) {
  absl::StatusOr<PsLiteSettings> s = From({{"DMLC_ROLE", "scheduler"},
                                           {"DMLC_PS_ROOT_URI", "127.0.0.1"},
                                           {"DMLC_PS_ROOT_PORT", "9124"},
                                           {"PETREL_REPLICAS", "2"}});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->node.van.port, 9124);
  EXPECT_EQ(s->node.postoffice.advertise_host, "127.0.0.1");
  EXPECT_EQ(s->replicas, 2);
}

TEST(NodeEnvironmentTest, NamesWhatIsMissingOrWrong) {
  auto message = [](const Vars& vars) {
    return std::string(From(vars).status().message());
  };
  EXPECT_NE(message({}).find("DMLC_ROLE is not set"), std::string::npos);
  EXPECT_NE(message({{"DMLC_ROLE", "boss"}}).find("DMLC_ROLE='boss'"),
            std::string::npos);
  EXPECT_NE(message({{"DMLC_ROLE", "server"}}).find("DMLC_PS_ROOT_PORT"),
            std::string::npos);
  EXPECT_NE(message({{"DMLC_ROLE", "server"}, {"DMLC_PS_ROOT_PORT", "x"}})
                .find("DMLC_PS_ROOT_PORT"),
            std::string::npos);
  EXPECT_NE(message({{"DMLC_ROLE", "server"},
                     {"DMLC_PS_ROOT_PORT", "9"},
                     {"DMLC_NUM_WORKER", "0"}})
                .find("DMLC_NUM_WORKER=0"),
            std::string::npos);
  EXPECT_NE(message({{"DMLC_ROLE", "scheduler"},
                     {"DMLC_PS_ROOT_PORT", "9"},
                     {"PETREL_REPLICAS", "many"}})
                .find("PETREL_REPLICAS"),
            std::string::npos);
}

}  // namespace
}  // namespace pslite
}  // namespace petrel
