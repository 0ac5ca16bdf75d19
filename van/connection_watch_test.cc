#include "van/connection_watch.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "van/zmq_van.h"

namespace petrel {
namespace {

using Event = ConnectionWatch::Event;

const absl::Time kT0 = absl::FromUnixSeconds(1000);
constexpr absl::Duration kGrace = absl::Milliseconds(300);

std::vector<int> Ids(const std::vector<ConnectionWatch::Lost>& lost) {
  std::vector<int> ids;
  for (const auto& l : lost) ids.push_back(l.node_id);
  return ids;
}

TEST(ConnectionWatchTest, DeclaresNodesLostOnlyAfterTheGracePeriod) {
  ConnectionWatch w(kGrace);
  w.Watch(8, "tcp://h:1");
  w.OnEvent("tcp://h:1", Event::kConnected, kT0);
  w.OnEvent("tcp://h:1", Event::kDisconnected, kT0 + absl::Seconds(1));
  EXPECT_TRUE(w.TakeLost(kT0 + absl::Milliseconds(1299)).empty());
  std::vector<ConnectionWatch::Lost> lost =
      w.TakeLost(kT0 + absl::Milliseconds(1300));
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_EQ(lost[0].node_id, 8);
  EXPECT_EQ(lost[0].address, "tcp://h:1");
  EXPECT_EQ(lost[0].reason, "connection closed");
  EXPECT_EQ(lost[0].down_for, absl::Milliseconds(300));
  // Reported once.
  EXPECT_TRUE(w.TakeLost(kT0 + absl::Seconds(5)).empty());
}

TEST(ConnectionWatchTest, ANodeRoutedAgainAfterItsLossIsWatchedAfresh) {
  ConnectionWatch w(kGrace);
  w.Watch(8, "tcp://h:1");
  w.OnEvent("tcp://h:1", Event::kConnected, kT0);
  w.OnEvent("tcp://h:1", Event::kDisconnected, kT0 + absl::Seconds(1));
  EXPECT_THAT(Ids(w.TakeLost(kT0 + absl::Seconds(2))),
              ::testing::ElementsAre(8));
  // A replacement at the same address: nothing is lost before its own
  // connection was up, and its loss is reported.
  w.Watch(8, "tcp://h:1");
  EXPECT_TRUE(w.TakeLost(kT0 + absl::Seconds(3)).empty());
  w.OnEvent("tcp://h:1", Event::kConnected, kT0 + absl::Seconds(4));
  w.OnEvent("tcp://h:1", Event::kDisconnected, kT0 + absl::Seconds(5));
  EXPECT_THAT(Ids(w.TakeLost(kT0 + absl::Seconds(6))),
              ::testing::ElementsAre(8));
  // And one at another address.
  w.Watch(8, "tcp://h:2");
  EXPECT_TRUE(w.TakeLost(kT0 + absl::Seconds(7)).empty());
  w.OnEvent("tcp://h:2", Event::kConnected, kT0 + absl::Seconds(8));
  w.OnEvent("tcp://h:2", Event::kDisconnected, kT0 + absl::Seconds(9));
  EXPECT_THAT(Ids(w.TakeLost(kT0 + absl::Seconds(10))),
              ::testing::ElementsAre(8));
  // Watching a node not reported keeps its connection's state.
  w.Watch(9, "tcp://h:3");
  w.OnEvent("tcp://h:3", Event::kConnected, kT0 + absl::Seconds(11));
  w.OnEvent("tcp://h:3", Event::kDisconnected, kT0 + absl::Seconds(12));
  w.Watch(9, "tcp://h:3");
  EXPECT_THAT(Ids(w.TakeLost(kT0 + absl::Seconds(13))),
              ::testing::ElementsAre(9));
}

TEST(ConnectionWatchTest, AReconnectWithinTheGraceIsNoLoss) {
  ConnectionWatch w(kGrace);
  w.Watch(8, "tcp://h:1");
  w.OnEvent("tcp://h:1", Event::kConnected, kT0);
  w.OnEvent("tcp://h:1", Event::kDisconnected, kT0 + absl::Milliseconds(10));
  w.OnEvent("tcp://h:1", Event::kConnected, kT0 + absl::Milliseconds(80));
  EXPECT_TRUE(w.TakeLost(kT0 + absl::Seconds(10)).empty());
  // A later loss starts its own grace period.
  w.OnEvent("tcp://h:1", Event::kDisconnected, kT0 + absl::Seconds(10));
  EXPECT_TRUE(w.TakeLost(kT0 + absl::Milliseconds(10200)).empty());
  EXPECT_THAT(Ids(w.TakeLost(kT0 + absl::Milliseconds(10300))),
              ::testing::ElementsAre(8));
}

TEST(ConnectionWatchTest, MapsAnAddressToEveryNodeRoutedThere) {
  ConnectionWatch w(kGrace);
  w.Watch(8, "tcp://h:1");
  w.Watch(9, "tcp://h:2");
  w.Watch(-1, "tcp://h:2");  // a temporary route: never reported
  w.Watch(11, "tcp://h:2");  // one node reached under two ids
  for (const char* a : {"tcp://h:1", "tcp://h:2"}) {
    w.OnEvent(a, Event::kConnected, kT0);
  }
  w.OnEvent("tcp://h:2", Event::kDisconnected, kT0);
  w.OnEvent("tcp://h:2", Event::kConnectFailed, kT0 + absl::Milliseconds(50));
  std::vector<ConnectionWatch::Lost> lost = w.TakeLost(kT0 + kGrace);
  EXPECT_THAT(Ids(lost), ::testing::ElementsAre(9, 11));
  EXPECT_EQ(lost[0].reason, "connection closed and reconnecting was refused");
}

TEST(ConnectionWatchTest, IgnoresConnectionsThatNeverCameUp) {
  ConnectionWatch w(kGrace);
  w.Watch(8, "tcp://h:1");
  w.OnEvent("tcp://h:1", Event::kConnectFailed, kT0);
  w.OnEvent("tcp://h:1", Event::kDisconnected, kT0);
  EXPECT_TRUE(w.TakeLost(kT0 + absl::Minutes(1)).empty());
}

TEST(ConnectionWatchTest, ForgetsNodesAndFollowsNewAddresses) {
  ConnectionWatch w(kGrace);
  w.Watch(8, "tcp://h:1");
  w.Watch(9, "tcp://h:1");
  w.Forget(9);
  w.Watch(8, "tcp://h:3");  // moved: the old address no longer counts
  w.OnEvent("tcp://h:1", Event::kConnected, kT0);
  w.OnEvent("tcp://h:1", Event::kDisconnected, kT0);
  EXPECT_TRUE(w.TakeLost(kT0 + absl::Minutes(1)).empty());
  // Events may precede the route (the connection came up first).
  w.OnEvent("tcp://h:4", Event::kConnected, kT0);
  w.OnEvent("tcp://h:4", Event::kDisconnected, kT0);
  w.Watch(12, "tcp://h:4");
  EXPECT_THAT(Ids(w.TakeLost(kT0 + kGrace)), ::testing::ElementsAre(12));
}

// The van end to end: a ZmqVan watching its connections reports a peer
// whose van went away (as a killed process's sockets close), once, and
// not a peer that stays.
TEST(ZmqVanWatchTest, ReportsAPeerWhoseSocketsClosed) {
  VanOptions options;
  options.bind_host = "127.0.0.1";
  options.tick_interval = absl::Milliseconds(10);
  MetricsRegistry metrics;
  absl::Mutex mu;
  std::vector<std::pair<int, std::string>> lost;
  int received = 0;
  // After what its handler touches, so it is destroyed first: the van thread
  // calls the handler until then.
  ZmqVan watcher(options, &metrics);
  watcher.set_my_id(1);
  watcher.WatchConnections(absl::Milliseconds(100),
                           [&](int id, const std::string& reason) {
                             absl::MutexLock lock(&mu);
                             lost.emplace_back(id, reason);
                           });
  ASSERT_TRUE(watcher.Start([](Message&&) {}, [] {}).ok());
  pb::Node me;
  me.set_id(1);
  me.set_host("127.0.0.1");
  me.set_port(watcher.port());
  me.set_transport_id(watcher.transport_id());
  std::vector<std::unique_ptr<ZmqVan>> peers;
  for (int id : {8, 10}) {
    peers.push_back(std::make_unique<ZmqVan>(options, &metrics));
    ZmqVan& peer = *peers.back();
    peer.set_my_id(id);
    ASSERT_TRUE(peer.Start(
                        [&](Message&&) {
                          absl::MutexLock lock(&mu);
                          ++received;
                        },
                        [] {})
                    .ok());
    peer.Connect(me);  // accepts the watcher's messages
    pb::Node node;
    node.set_id(id);
    node.set_host("127.0.0.1");
    node.set_port(peer.port());
    watcher.Connect(node);
    Message hello;
    hello.meta.set_sender(1);
    hello.meta.set_recipient(id);
    ASSERT_TRUE(watcher.Send(std::move(hello)).ok());
  }
  absl::MutexLock lock(&mu);
  auto both_up = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu) { return received == 2; };
  ASSERT_TRUE(
      mu.AwaitWithTimeout(absl::Condition(&both_up), absl::Seconds(10)));
  mu.Unlock();
  peers[0]->Stop();  // node 8's sockets close
  mu.Lock();
  auto reported = [&]()
                      ABSL_SHARED_LOCKS_REQUIRED(mu) { return !lost.empty(); };
  ASSERT_TRUE(
      mu.AwaitWithTimeout(absl::Condition(&reported), absl::Seconds(10)));
  EXPECT_EQ(lost[0].first, 8);
  EXPECT_THAT(lost[0].second, ::testing::HasSubstr("connection closed"));
  // Node 10 stays, and 8 is reported once: nothing more within a few
  // grace periods.
  auto more = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu) { return lost.size() > 1; };
  EXPECT_FALSE(
      mu.AwaitWithTimeout(absl::Condition(&more), absl::Milliseconds(400)));
}

}  // namespace
}  // namespace petrel
