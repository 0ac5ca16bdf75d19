#include "cluster/testing/van_cluster.h"

#include <atomic>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "base/testing/wait_until.h"

namespace petrel {
namespace {

using ::testing::HasSubstr;

TEST(VanClusterTest, NodesJoinAtTheirRanksAndTheJobEndsWhenWorkersFinish) {
  VanCluster cluster(ClusterOfSize(2, 3));
  ASSERT_TRUE(cluster.Start().ok());
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(cluster.server(i)->my_id(), ServerRankToId(i));
    EXPECT_EQ(cluster.server(i)->my_rank(), i);
  }
  EXPECT_EQ(cluster.worker(2)->my_id(), WorkerRankToId(2));
  // The scheduler holds the same table (itself first) as the nodes.
  std::vector<pb::Node> table = cluster.scheduler()->nodes();
  ASSERT_EQ(table.size(), 6u);
  EXPECT_EQ(table[0].id(), kSchedulerId);
  EXPECT_EQ(cluster.worker(0)->nodes().size(), table.size());
  EXPECT_TRUE(cluster.Finish().ok());
}

TEST(VanClusterTest, InterruptEndsTheJobAsFailedOnEveryNode) {
  VanCluster cluster(VanClusterOptions{});
  ASSERT_TRUE(cluster.Start().ok());
  cluster.control()->Interrupt("stopped by the test");
  absl::Status s = cluster.server(0)->WaitForTerminate(absl::Seconds(10));
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted);
  EXPECT_THAT(s.message(), HasSubstr("stopped by the test"));
  EXPECT_EQ(cluster.Finish().code(), absl::StatusCode::kAborted);
}

TEST(VanClusterTest, ControlFactoryReplacesTheJoinResponder) {
  class Refuser : public ClusterControl {
   public:
    absl::Status Run() override { return absl::OkStatus(); }
    void Interrupt(const std::string&) override {}
  };
  VanClusterOptions o;
  o.join_timeout = absl::Milliseconds(100);
  o.control_factory = [](Postoffice*) { return std::make_unique<Refuser>(); };
  VanCluster cluster(o);
  EXPECT_EQ(cluster.Start().code(), absl::StatusCode::kDeadlineExceeded);
}

TEST(WaitUntilTest, ReturnsOnceTheConditionHoldsAndFalseAfterTheTimeout) {
  std::atomic<int> polls{0};
  EXPECT_TRUE(WaitUntil([&] { return ++polls == 3; }));
  EXPECT_EQ(polls.load(), 3);
  EXPECT_FALSE(WaitUntil([] { return false; }, absl::Milliseconds(20)));
}

}  // namespace
}  // namespace petrel
