#include "scheduler/membership_controller.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "base/metrics.h"
#include "cluster/testing/van_cluster.h"
#include "van/loopback_van.h"

namespace petrel {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// The scheduler's side as the controller sees it: a table of one scheduler,
// `servers` servers and one worker, and a record of what was sent.
class FakeHost : public MembershipController::Host {
 public:
  explicit FakeHost(int servers) {
    table_.push_back(Node(pb::ROLE_SCHEDULER, kSchedulerId, 0));
    for (int r = 0; r < servers; ++r) {
      table_.push_back(Node(pb::ROLE_SERVER, ServerRankToId(r), r));
    }
    table_.push_back(Node(pb::ROLE_WORKER, WorkerRankToId(0), 0));
  }

  static pb::Node Node(pb::Role role, int id, int rank) {
    pb::Node n;
    n.set_role(role);
    n.set_id(id);
    n.set_rank(rank);
    n.set_host("127.0.0.1");
    n.set_port(1000 + id);
    return n;
  }

  std::vector<pb::Node>& table() override { return table_; }
  void AdmitServer(const pb::Node& node) override {
    admitted.push_back(node.id());
    dead.erase(node.id());
  }
  bool IsDead(int id) const override { return dead.contains(id); }
  bool WorkerGone(int) const override { return false; }
  std::string Describe(int id) const override {
    return absl::StrCat("node ", id);
  }
  void SendControl(int recipient, pb::Control control) override {
    sent.emplace_back(recipient, std::move(control));
  }
  void SendToLiveNodes(const pb::Control& control, int except) override {
    for (const pb::Node& n : table_) {
      if (n.id() == kSchedulerId || n.id() == except || IsDead(n.id())) {
        continue;
      }
      SendControl(n.id(), control);
    }
  }
  void PassServerBarriers() override { ++barrier_passes; }

  // The controls sent to `id`, by command.
  std::vector<pb::Command> SentTo(int id) const {
    std::vector<pb::Command> out;
    for (const auto& [to, c] : sent) {
      if (to == id) out.push_back(c.cmd());
    }
    return out;
  }
  // The last control sent to `id`.
  const pb::Control& LastTo(int id) const {
    for (auto it = sent.rbegin(); it != sent.rend(); ++it) {
      if (it->first == id) return it->second;
    }
    ADD_FAILURE() << "nothing sent to " << id;
    return sent.front().second;
  }

  absl::flat_hash_set<int> dead;
  std::vector<int> admitted;
  std::vector<std::pair<int, pb::Control>> sent;
  int barrier_passes = 0;

 private:
  std::vector<pb::Node> table_;
};

class MembershipControllerTest : public ::testing::Test {
 protected:
  void Make(int servers, int replicas) {
    po_ = std::make_unique<Postoffice>(
        TestNodeOptions(pb::ROLE_SCHEDULER, servers, 1, 0),
        std::make_unique<LoopbackVan>(&network_, TestVanOptions(), &metrics_),
        &metrics_);
    host_ = std::make_unique<FakeHost>(servers);
    controller_ = std::make_unique<MembershipController>(po_.get(), replicas,
                                                         host_.get());
    KeyRangeMap ranges = KeyRangeMap::Uniform(servers, 4).value();
    controller_->SetMap(
        ReplicaMap::Initial(ranges, controller_->ResolvedReplicas()).value());
  }

  // Server `rank` dies: the controller's verdict and the NODE_DEAD notice.
  bool Kill(int rank, pb::Control* notice) {
    host_->dead.insert(ServerRankToId(rank));
    return controller_->FailOver(host_->table()[1 + rank], notice);
  }

  LoopbackNetwork network_;
  MetricsRegistry metrics_;
  std::unique_ptr<Postoffice> po_;
  std::unique_ptr<FakeHost> host_;
  std::unique_ptr<MembershipController> controller_;
};

TEST_F(MembershipControllerTest, FailsOverAReplicatedServerWithTheNextMap) {
  Make(3, 2);
  const uint64_t before = controller_->map()->version();
  pb::Control notice;
  ASSERT_TRUE(Kill(1, &notice));
  EXPECT_EQ(controller_->map()->version(), before + 1);
  EXPECT_EQ(notice.map_version(), before + 1);
  EXPECT_TRUE(IsServerId(notice.successor()));
  EXPECT_NE(notice.successor(), ServerRankToId(1));
  EXPECT_TRUE(controller_->map()->dead(1));
  EXPECT_TRUE(controller_->lost(ServerRankToId(1)));
  EXPECT_EQ(host_->barrier_passes, 1);
  EXPECT_EQ(metrics_.Value("petrel_scheduler_failovers_total", {}).value_or(0),
            1);
}

TEST_F(MembershipControllerTest, DoesNotFailOverAnUnreplicatedServer) {
  Make(3, 1);
  const uint64_t before = controller_->map()->version();
  pb::Control notice;
  EXPECT_FALSE(Kill(0, &notice));
  EXPECT_EQ(controller_->map()->version(), before);
  EXPECT_FALSE(controller_->lost(ServerRankToId(0)));
  EXPECT_EQ(host_->barrier_passes, 0);
}

TEST_F(MembershipControllerTest, OnlyAServerReplacingADeadOneMayJoin) {
  Make(3, 2);
  pb::Node worker = FakeHost::Node(pb::ROLE_WORKER, kEmptyNodeId, -1);
  worker.set_requested_rank(-1);
  EXPECT_THAT(controller_->JoinRank(worker).status().message(),
              HasSubstr("only a server may join"));
  pb::Node server = FakeHost::Node(pb::ROLE_SERVER, kEmptyNodeId, -1);
  server.set_requested_rank(-1);
  EXPECT_THAT(controller_->JoinRank(server).status().message(),
              HasSubstr("no dead server to replace"));
  pb::Control notice;
  ASSERT_TRUE(Kill(2, &notice));
  EXPECT_EQ(controller_->JoinRank(server).value(), 2);
}

TEST_F(MembershipControllerTest, AReplacementIsAReplicaOnceItCaughtUp) {
  Make(3, 2);
  pb::Control notice;
  ASSERT_TRUE(Kill(1, &notice));
  pb::Node server = FakeHost::Node(pb::ROLE_SERVER, kEmptyNodeId, -1);
  server.set_requested_rank(-1);
  server.set_port(4242);
  controller_->Admit(server, controller_->JoinRank(server).value());
  const int id = ServerRankToId(1);
  EXPECT_THAT(host_->admitted, ElementsAre(id));
  EXPECT_EQ(host_->table()[2].port(), 4242);
  // The live nodes learn its address before it gets the table and map.
  EXPECT_THAT(host_->SentTo(WorkerRankToId(0)),
              ElementsAre(pb::COMMAND_NODE_BACK));
  EXPECT_THAT(host_->SentTo(id), ElementsAre(pb::COMMAND_ADD_NODE));
  // Another server may not take the rank it is copying.
  EXPECT_FALSE(controller_->JoinRank(server).ok());

  const uint64_t copied_against = controller_->map()->version();
  controller_->HandleCaughtUp(id, copied_against);
  EXPECT_EQ(host_->LastTo(id).cmd(), pb::COMMAND_CAUGHT_UP);
  EXPECT_EQ(host_->LastTo(id).reason(), "");
  EXPECT_EQ(controller_->map()->version(), copied_against + 1);
  EXPECT_FALSE(controller_->map()->dead(1));
  EXPECT_FALSE(controller_->lost(id));
  EXPECT_EQ(host_->LastTo(WorkerRankToId(0)).cmd(), pb::COMMAND_NODE_BACK);
  EXPECT_EQ(host_->LastTo(WorkerRankToId(0)).map_version(), copied_against + 1);
}

TEST_F(MembershipControllerTest, AReplacementThatDiesCopyingFreesItsRank) {
  Make(3, 2);
  pb::Control notice;
  ASSERT_TRUE(Kill(1, &notice));
  pb::Node server = FakeHost::Node(pb::ROLE_SERVER, kEmptyNodeId, -1);
  server.set_requested_rank(-1);
  controller_->Admit(server, controller_->JoinRank(server).value());
  const int id = ServerRankToId(1);
  const uint64_t version = controller_->map()->version();

  // It dies before CAUGHT_UP: the job goes on with the map it had.
  pb::Control dead;
  ASSERT_TRUE(Kill(1, &dead));
  EXPECT_EQ(dead.successor(), 0);
  EXPECT_EQ(controller_->map()->version(), version);
  EXPECT_TRUE(controller_->map()->dead(1));
  EXPECT_TRUE(controller_->lost(id));
  // Its rank waits for the next replacement, which can catch up.
  EXPECT_EQ(controller_->JoinRank(server).value(), 1);
  controller_->Admit(server, 1);
  controller_->HandleCaughtUp(id, version);
  EXPECT_EQ(host_->LastTo(id).reason(), "");
  EXPECT_EQ(controller_->map()->version(), version + 1);
  EXPECT_FALSE(controller_->map()->dead(1));
}

TEST_F(MembershipControllerTest, RefusesACaughtUpAgainstAMapNotPublished) {
  Make(3, 2);
  pb::Control notice;
  ASSERT_TRUE(Kill(0, &notice));
  pb::Node server = FakeHost::Node(pb::ROLE_SERVER, kEmptyNodeId, -1);
  server.set_requested_rank(-1);
  controller_->Admit(server, controller_->JoinRank(server).value());
  const int id = ServerRankToId(0);
  const uint64_t version = controller_->map()->version();
  controller_->HandleCaughtUp(id, version + 7);
  EXPECT_THAT(host_->LastTo(id).reason(),
              HasSubstr("not one published while it copied"));
  EXPECT_EQ(controller_->map()->version(), version);
  EXPECT_TRUE(controller_->map()->dead(0));
}

TEST_F(MembershipControllerTest, ACaughtUpFromANodeCopyingNothingIsRefused) {
  Make(3, 2);
  controller_->HandleCaughtUp(WorkerRankToId(0), 1);
  EXPECT_THAT(host_->LastTo(WorkerRankToId(0)).reason(),
              HasSubstr("not a server copying key ranges"));
}

TEST_F(MembershipControllerTest, RefusesToDrainWhatIsNotALiveServer) {
  Make(3, 2);
  EXPECT_EQ(controller_->RequestDrain(99).code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(controller_->RequestDrain(WorkerRankToId(0)).message(),
              HasSubstr("is a worker, not a server"));
  pb::Control notice;
  ASSERT_TRUE(Kill(2, &notice));
  EXPECT_THAT(controller_->RequestDrain(ServerRankToId(2)).message(),
              HasSubstr("is dead, not a live server"));
}

TEST_F(MembershipControllerTest, RefusesToDrainAnUnreplicatedJob) {
  Make(3, 1);
  EXPECT_THAT(controller_->RequestDrain(ServerRankToId(0)).message(),
              HasSubstr("not replicated"));
}

TEST_F(MembershipControllerTest, ADrainAsksTheGainingServersToCopy) {
  Make(3, 2);
  ASSERT_TRUE(controller_->RequestDrain(ServerRankToId(2)).ok());
  int copies = 0;
  for (const auto& [to, c] : host_->sent) {
    if (c.cmd() != pb::COMMAND_DRAIN_COPY) continue;
    EXPECT_NE(to, ServerRankToId(2));
    EXPECT_EQ(c.drained_node(), ServerRankToId(2));
    ++copies;
  }
  EXPECT_GT(copies, 0);
  EXPECT_THAT(controller_->RequestDrain(ServerRankToId(1)).message(),
              HasSubstr("drain one at a time"));
}

}  // namespace
}  // namespace petrel
