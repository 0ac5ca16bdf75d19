#include "tools/launch/hosts_file.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace petrel {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(HostsFileTest, ParsesHostsSlotsRolesAndComments) {
  absl::StatusOr<std::vector<HostEntry>> hosts = ParseHostsFile(
      "# the job's hosts\n"
      "127.0.0.2 slots=2 roles=server,worker\n"
      "\n"
      "  alice@node3\troles=scheduler   # login node\n",
      "hosts");
  ASSERT_TRUE(hosts.ok()) << hosts.status();
  ASSERT_EQ(hosts->size(), 2u);
  EXPECT_EQ((*hosts)[0].target, "127.0.0.2");
  EXPECT_EQ((*hosts)[0].address, "127.0.0.2");
  EXPECT_EQ((*hosts)[0].slots, 2);
  EXPECT_FALSE((*hosts)[0].scheduler);
  EXPECT_TRUE((*hosts)[0].server);
  EXPECT_TRUE((*hosts)[0].worker);
  EXPECT_EQ((*hosts)[1].target, "alice@node3");
  EXPECT_EQ((*hosts)[1].address, "node3");
  EXPECT_EQ((*hosts)[1].slots, 0);
  EXPECT_TRUE((*hosts)[1].scheduler);
  EXPECT_FALSE((*hosts)[1].server);
}

TEST(HostsFileTest, ErrorsNameFileAndLine) {
  struct Case {
    const char* text;
    const char* message;
  };
  for (const Case& c : {
           Case{"", "hosts: no host"},
           Case{"# only a comment\n", "hosts: no host"},
           Case{"a\nb slots=0\n", "hosts:2: slots=0 is not"},
           Case{"a slots=x\n", "hosts:1: slots=x"},
           Case{"a roles=server,db\n", "hosts:1: unknown role 'db'"},
           Case{"a cpus=4\n", "hosts:1: unknown setting 'cpus=4'"},
           Case{"a\na\n", "hosts:2: host a is listed twice"},
           Case{"slots=2\n", "hosts:1: a line starts with the host"},
           Case{"bob@\n", "hosts:1: no host name"},
       }) {
    absl::StatusOr<std::vector<HostEntry>> hosts =
        ParseHostsFile(c.text, "hosts");
    ASSERT_FALSE(hosts.ok()) << c.text;
    EXPECT_THAT(hosts.status().message(), HasSubstr(c.message)) << c.text;
  }
  EXPECT_TRUE(absl::IsNotFound(ReadHostsFile("/nonexistent/hosts").status()));
}

TEST(HostsFileTest, PlacesRoundRobinAndHonoursRolesAndSlots) {
  absl::StatusOr<std::vector<HostEntry>> hosts =
      ParseHostsFile("h0 roles=scheduler\nh1 slots=3\nh2 slots=1\n", "f");
  ASSERT_TRUE(hosts.ok());
  absl::StatusOr<Placement> p = PlaceProcesses(*hosts, 2, 2);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->scheduler, 0u);
  EXPECT_THAT(p->servers, ElementsAre(1, 2));
  EXPECT_THAT(p->workers, ElementsAre(1, 1));  // h2 is full
  p = PlaceProcesses(*hosts, 2, 3);
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(p.status().message(), HasSubstr("no free slot for worker 2"));
}

TEST(HostsFileTest, EveryRoleNeedsAHost) {
  absl::StatusOr<std::vector<HostEntry>> hosts =
      ParseHostsFile("h0 roles=server,worker\n", "f");
  ASSERT_TRUE(hosts.ok());
  EXPECT_THAT(PlaceProcesses(*hosts, 1, 1).status().message(),
              HasSubstr("scheduler"));
  hosts = ParseHostsFile("h0 roles=scheduler,server\n", "f");
  ASSERT_TRUE(hosts.ok());
  EXPECT_THAT(PlaceProcesses(*hosts, 1, 1).status().message(),
              HasSubstr("may run a worker"));
}

}  // namespace
}  // namespace petrel
