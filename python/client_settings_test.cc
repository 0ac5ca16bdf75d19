#include "python/client_settings.h"

#include <map>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace petrel {
namespace {

using ::testing::HasSubstr;

class FakeEnv {
 public:
  explicit FakeEnv(std::map<std::string, std::string> vars)
      : vars_(std::move(vars)) {}
  std::function<const char*(const char*)> Getenv() const {
    return [this](const char* name) -> const char* {
      auto it = vars_.find(name);
      return it == vars_.end() ? nullptr : it->second.c_str();
    };
  }

 private:
  std::map<std::string, std::string> vars_;
};

TEST(WorkerSettingsTest, NoSchedulerAnywhereIsAnError) {
  FakeEnv env({});
  absl::StatusOr<NodeSettings> s = WorkerSettings({}, env.Getenv());
  ASSERT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.status().message(), HasSubstr("PETREL_SCHEDULER"));
}

TEST(WorkerSettingsTest, ReadsTheLauncherEnvironment) {
  FakeEnv env({{"DMLC_ROLE", "worker"},
               {"DMLC_PS_ROOT_URI", "10.0.0.1"},
               {"DMLC_PS_ROOT_PORT", "9000"},
               {"DMLC_NUM_SERVER", "3"},
               {"DMLC_NUM_WORKER", "2"},
               {"DMLC_NODE_HOST", "10.0.0.7"},
               {"PETREL_RANK", "1"}});
  absl::StatusOr<NodeSettings> s = WorkerSettings({}, env.Getenv());
  ASSERT_TRUE(s.ok()) << s.status();
  const PostofficeOptions& po = s->postoffice;
  EXPECT_EQ(po.role, pb::ROLE_WORKER);
  EXPECT_EQ(po.scheduler_host, "10.0.0.1");
  EXPECT_EQ(po.scheduler_port, 9000);
  EXPECT_EQ(po.num_servers, 3);
  EXPECT_EQ(po.num_workers, 2);
  EXPECT_EQ(po.advertise_host, "10.0.0.7");
  EXPECT_EQ(po.requested_rank, 1);
  EXPECT_EQ(s->metrics_port, -1);
}

TEST(WorkerSettingsTest, ArgumentsWinOverTheEnvironment) {
  FakeEnv env({{"DMLC_PS_ROOT_URI", "10.0.0.1"},
               {"DMLC_PS_ROOT_PORT", "9000"},
               {"PETREL_SCHEDULER", "10.0.0.2:9001"},
               {"DMLC_NUM_SERVER", "3"}});
  ClientArgs args;
  args.scheduler = "127.0.0.1:1234";
  args.num_servers = 2;
  args.advertise_host = "127.0.0.1";
  args.join_timeout = absl::Seconds(5);
  absl::StatusOr<NodeSettings> s = WorkerSettings(args, env.Getenv());
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->postoffice.scheduler_host, "127.0.0.1");
  EXPECT_EQ(s->postoffice.scheduler_port, 1234);
  EXPECT_EQ(s->postoffice.num_servers, 2);
  EXPECT_EQ(s->postoffice.advertise_host, "127.0.0.1");
  EXPECT_EQ(s->postoffice.join_timeout, absl::Seconds(5));
}

TEST(WorkerSettingsTest, PetrelSchedulerWinsOverDmlc) {
  FakeEnv env({{"DMLC_PS_ROOT_URI", "10.0.0.1"},
               {"DMLC_PS_ROOT_PORT", "9000"},
               {"PETREL_SCHEDULER", "10.0.0.2:9001"}});
  absl::StatusOr<NodeSettings> s = WorkerSettings({}, env.Getenv());
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->postoffice.scheduler_host, "10.0.0.2");
  EXPECT_EQ(s->postoffice.scheduler_port, 9001);
}

TEST(WorkerSettingsTest, BadValuesNameWhatToFix) {
  FakeEnv server({{"DMLC_ROLE", "server"}, {"PETREL_SCHEDULER", "h:1"}});
  EXPECT_THAT(WorkerSettings({}, server.Getenv()).status().message(),
              HasSubstr("DMLC_ROLE=server"));
  FakeEnv bad_rank({{"PETREL_SCHEDULER", "h:1"}, {"PETREL_RANK", "x"}});
  EXPECT_THAT(WorkerSettings({}, bad_rank.Getenv()).status().message(),
              HasSubstr("PETREL_RANK"));
  FakeEnv ok({{"PETREL_SCHEDULER", "h:1"}, {"DMLC_NUM_WORKER", "1"}});
  ClientArgs args;
  args.rank = 1;  // only one worker
  EXPECT_THAT(WorkerSettings(args, ok.Getenv()).status().message(),
              HasSubstr("rank"));
  ClientArgs bad_address;
  bad_address.scheduler = "nohost";
  EXPECT_EQ(WorkerSettings(bad_address, ok.Getenv()).status().code(),
            absl::StatusCode::kInvalidArgument);
  ClientArgs bad_timeout;
  bad_timeout.join_timeout = absl::ZeroDuration();
  EXPECT_THAT(WorkerSettings(bad_timeout, ok.Getenv()).status().message(),
              HasSubstr("join_timeout"));
}

}  // namespace
}  // namespace petrel
