#include "tools/launch/slurm_nodelist.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace petrel {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<std::string> Expand(const char* list) {
  absl::StatusOr<std::vector<std::string>> hosts = ExpandSlurmNodeList(list);
  EXPECT_TRUE(hosts.ok()) << list << ": " << hosts.status();
  return hosts.ok() ? *hosts : std::vector<std::string>{};
}

TEST(SlurmNodeListTest, PlainNames) {
  EXPECT_THAT(Expand("vm"), ElementsAre("vm"));
  EXPECT_THAT(Expand("a,b.example.org,c-1"),
              ElementsAre("a", "b.example.org", "c-1"));
}

TEST(SlurmNodeListTest, RangesKeepZeroPaddingAndOrder) {
  EXPECT_THAT(Expand("node[01-03,07],gpu5"),
              ElementsAre("node01", "node02", "node03", "node07", "gpu5"));
  EXPECT_THAT(Expand("n[08-10]"), ElementsAre("n08", "n09", "n10"));
  EXPECT_THAT(Expand("n[9-11]-ib"), ElementsAre("n9-ib", "n10-ib", "n11-ib"));
}

TEST(SlurmNodeListTest, SeveralBracketGroupsMultiply) {
  EXPECT_THAT(Expand("r[1-2]n[1-2]"),
              ElementsAre("r1n1", "r1n2", "r2n1", "r2n2"));
}

TEST(SlurmNodeListTest, RejectsMalformedLists) {
  for (const char* bad : {"", " ", "n[1-2", "n1-2]", "n[2-1]", "n[a-b]", "n[]",
                          "n[1-]", "a,,b", "n[[1]]", "n[0-99999999]"}) {
    absl::StatusOr<std::vector<std::string>> hosts = ExpandSlurmNodeList(bad);
    EXPECT_FALSE(hosts.ok()) << "'" << bad << "' gave " << hosts->size();
    if (!hosts.ok()) {
      EXPECT_THAT(hosts.status().message(), HasSubstr("bad Slurm node list"));
    }
  }
}

}  // namespace
}  // namespace petrel
