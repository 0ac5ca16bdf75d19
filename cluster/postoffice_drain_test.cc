// A node's side of a server drain (cluster/postoffice_membership.cc): it
// answers the scheduler's DRAIN_QUERY with DRAIN_DONE only when it routes by
// the map asked about, waits for no answer from the drained server, and routes
// no request at that moment (Postoffice::RoutingScope), so that a request
// routed by the map before the drain cannot still be on its way there.
#include <atomic>
#include <optional>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

#include "base/testing/wait_until.h"
#include "cluster/customer.h"
#include "cluster/postoffice.h"
#include "cluster/testing/van_cluster.h"

namespace petrel {
namespace {

// Asks `node` whether it is done with server `drained` under map `version`,
// as the scheduler does.
void Query(VanCluster& cluster, int node, int drained, uint64_t version,
           bool retire = false) {
  Message msg;
  msg.meta.set_recipient(node);
  pb::Control* query = msg.meta.mutable_control();
  query->set_cmd(pb::COMMAND_DRAIN_QUERY);
  query->set_drained_node(drained);
  query->set_map_version(version);
  query->set_drain_retire(retire);
  ASSERT_TRUE(cluster.scheduler()->Send(std::move(msg)).ok());
}

// How many DRAIN_DONE `node` sent for server `drained`.
int Answers(JoinResponder* responder, int node, int drained) {
  int n = 0;
  for (const auto& [sender, control] : responder->drain_done()) {
    n += sender == node && control.drained_node() == drained;
  }
  return n;
}

TEST(PostofficeDrainTest, AnswersOnlyWhenNothingIsRoutedOrOwedByTheServer) {
  VanCluster cluster(ClusterOfSize(2, 1));
  ASSERT_TRUE(cluster.Start().ok());
  auto* responder = static_cast<JoinResponder*>(cluster.control());
  Postoffice* worker = cluster.worker(0);
  const int me = worker->my_id();
  const int drained = ServerRankToId(0);
  const int other = ServerRankToId(1);
  const int nobody = 999;  // no request goes there
  // A node handles the scheduler's messages in order, on its van thread:
  // once a later one was handled (an answer about `nobody`, or a request
  // to app 8 when the node answers nothing), the query before it was too.
  std::atomic<int> handled{0};
  Customer marker(8, 0, worker);
  marker.set_request_handler([&handled](Message&&, bool) { ++handled; });
  ASSERT_TRUE(marker.Start().ok());
  Customer scheduler_app(8, 0, cluster.scheduler());
  ASSERT_TRUE(scheduler_app.Start().ok());
  auto handled_after = [&]() {
    const int before = handled.load();
    Message m;
    m.meta.set_recipient(me);
    m.meta.set_timestamp(scheduler_app.NewRequest({me}));
    EXPECT_TRUE(scheduler_app.SendRequest(std::move(m)).ok());
    EXPECT_TRUE(WaitUntil([&] { return handled.load() > before; }));
  };
  int others = 0;
  auto ask = [&](uint64_t version) {
    Query(cluster, me, drained, version);
    Query(cluster, me, nobody, 0);
    ++others;
    EXPECT_TRUE(
        WaitUntil([&] { return Answers(responder, me, nobody) == others; }));
  };

  // Nothing routed or pending: done.
  ask(0);
  EXPECT_EQ(Answers(responder, me, drained), 1);

  // A request being routed (sliced by the map, not yet registered): not
  // yet, whatever its recipient turns out to be.
  {
    std::optional<Postoffice::RoutingScope> routing(std::in_place, worker);
    Query(cluster, me, drained, 0);
    handled_after();
  }
  ask(0);
  EXPECT_EQ(Answers(responder, me, drained), 2);

  // A map older than the one asked about: not yet.
  ask(worker->map_version() + 1);
  EXPECT_EQ(Answers(responder, me, drained), 2);

  // A request to the drained server still unanswered (the server has no
  // app 7): not yet; one to another server does not hold it back.
  Customer sender(7, 0, worker);
  ASSERT_TRUE(sender.Start().ok());
  sender.NewRequest({other});
  ask(0);
  EXPECT_EQ(Answers(responder, me, drained), 3);
  sender.NewRequest({drained});
  ask(0);
  EXPECT_EQ(Answers(responder, me, drained), 3);
  EXPECT_TRUE(cluster.Finish().ok());
}

// The drain's last round (drain_retire): the node retires the drained
// server (its worker clocks skip it, Postoffice::Retired) only when it
// answers; a query it cannot answer yet leaves it as it was.
TEST(PostofficeDrainTest, RetiresTheServerOnlyWhenItAnswersTheLastRound) {
  VanCluster cluster(ClusterOfSize(2, 1));
  ASSERT_TRUE(cluster.Start().ok());
  auto* responder = static_cast<JoinResponder*>(cluster.control());
  Postoffice* worker = cluster.worker(0);
  const int me = worker->my_id();
  const int drained = ServerRankToId(0);
  const int nobody = 999;
  int others = 0;
  auto ask = [&](bool retire) {
    Query(cluster, me, drained, 0, retire);
    Query(cluster, me, nobody, 0);
    ++others;
    EXPECT_TRUE(
        WaitUntil([&] { return Answers(responder, me, nobody) == others; }));
  };
  ask(false);  // an earlier round: answered, not retired
  EXPECT_EQ(Answers(responder, me, drained), 1);
  EXPECT_FALSE(worker->Retired(drained));
  // A request to it unanswered: likewise.
  Customer sender(7, 0, worker);
  ASSERT_TRUE(sender.Start().ok());
  sender.NewRequest({drained});
  ask(true);
  EXPECT_EQ(Answers(responder, me, drained), 1);
  EXPECT_FALSE(worker->Retired(drained));
  // Nothing owed any more: answered and retired.
  sender.FailRequestsTo(drained, absl::CancelledError("done"));
  ask(true);
  EXPECT_EQ(Answers(responder, me, drained), 2);
  EXPECT_TRUE(worker->Retired(drained));
  EXPECT_FALSE(worker->Retired(ServerRankToId(1)));
  EXPECT_TRUE(cluster.Finish().ok());
}

}  // namespace
}  // namespace petrel
