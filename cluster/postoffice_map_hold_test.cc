// A server holds a worker's request sliced by a newer key-range map than
// its own (and the worker's requests behind it) until that map arrives, so
// that it forwards by the map the worker used (cluster/map_hold.h);
// a map that never comes releases them after a bound.
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"

#include "base/testing/wait_until.h"
#include "cluster/customer.h"
#include "cluster/key_range_map.h"
#include "cluster/postoffice.h"
#include "cluster/replica_map.h"
#include "cluster/testing/van_cluster.h"

namespace petrel {
namespace {

constexpr int kApp = 8;

struct Seen {
  int sender;
  uint64_t map_version;
};

class Recorder {
 public:
  explicit Recorder(Postoffice* server) : customer_(kApp, 0, server) {
    customer_.set_request_handler([this](Message&& m, bool duplicate) {
      if (duplicate) return;  // a resend of one not answered (none is)
      absl::MutexLock lock(&mu_);
      seen_.push_back({m.meta.sender(), m.meta.map_version()});
    });
  }
  absl::Status Start() { return customer_.Start(); }
  std::vector<Seen> seen() {
    absl::MutexLock lock(&mu_);
    return seen_;
  }

 private:
  absl::Mutex mu_;
  std::vector<Seen> seen_;
  // Last, so it is destroyed first: the van thread calls its handler until
  // then.
  Customer customer_;
};

// Sends server 0 one request from `from`, sliced by map `version`.
void SendTo0(Customer& from, uint64_t version) {
  Message m;
  m.meta.set_recipient(ServerRankToId(0));
  m.meta.set_timestamp(from.NewRequest({ServerRankToId(0)}));
  m.meta.set_map_version(version);
  ASSERT_TRUE(from.SendRequest(std::move(m)).ok());
}

// The scheduler tells server 0 that server 2 died, with the next map
// (version 2 of a 3-server, 2-copy job; the server routes by version 0).
void FailOverServer2(VanCluster& cluster) {
  absl::StatusOr<ReplicaMap> map =
      ReplicaMap::Initial(KeyRangeMap::Uniform(3, 32).value(), 2)
          ->WithoutServer(2);
  ASSERT_TRUE(map.ok()) << map.status();
  ASSERT_EQ(map->version(), 2u);
  Message msg;
  msg.meta.set_recipient(ServerRankToId(0));
  pb::Control* c = msg.meta.mutable_control();
  c->set_cmd(pb::COMMAND_NODE_DEAD);
  c->add_nodes()->set_id(ServerRankToId(2));
  c->set_reason("test");
  map->ToControl(c);
  c->set_successor(ServerRankToId(map->SuccessorOf(2)));
  ASSERT_TRUE(cluster.scheduler()->Send(std::move(msg)).ok());
}

TEST(PostofficeMapHoldTest, HeldUntilTheMapComesThenInOrder) {
  VanCluster cluster(ClusterOfSize(3, 2));
  ASSERT_TRUE(cluster.Start().ok());
  Recorder server(cluster.server(0));
  ASSERT_TRUE(server.Start().ok());
  Customer w0(kApp, 0, cluster.worker(0));
  Customer w1(kApp, 0, cluster.worker(1));
  ASSERT_TRUE(w0.Start().ok());
  ASSERT_TRUE(w1.Start().ok());
  const int id0 = cluster.worker(0)->my_id();
  const int id1 = cluster.worker(1)->my_id();

  SendTo0(w0, 2);  // ahead of the server's map (version 0): held
  SendTo0(w0, 0);  // behind a held one of the same worker: held
  SendTo0(w1, 0);  // another worker's, on the server's map: handled
  ASSERT_TRUE(WaitUntil([&] { return server.seen().size() == 1; }));
  EXPECT_EQ(server.seen()[0].sender, id1);
  EXPECT_EQ(cluster.server(0)->map_version(), 0u);

  FailOverServer2(cluster);
  ASSERT_TRUE(WaitUntil([&] { return server.seen().size() == 3; }));
  const std::vector<Seen> seen = server.seen();
  EXPECT_EQ(cluster.server(0)->map_version(), 2u);
  EXPECT_EQ(seen[1].sender, id0);
  EXPECT_EQ(seen[1].map_version, 2u);  // in the order they came
  EXPECT_EQ(seen[2].sender, id0);
  EXPECT_EQ(seen[2].map_version, 0u);
  EXPECT_TRUE(cluster.Finish().ok());
}

TEST(PostofficeMapHoldTest, AMapThatNeverComesReleasesThemAfterTheBound) {
  VanCluster cluster(ClusterOfSize(3, 1));
  ASSERT_TRUE(cluster.Start().ok());
  Recorder server(cluster.server(0));
  ASSERT_TRUE(server.Start().ok());
  Customer w0(kApp, 0, cluster.worker(0));
  ASSERT_TRUE(w0.Start().ok());
  const absl::Time start = absl::Now();
  SendTo0(w0, 7);
  ASSERT_TRUE(
      WaitUntil([&] { return server.seen().size() == 1; }, absl::Seconds(30)));
  // Released by the tick once it waited the bound (2 s), not before.
  EXPECT_GE(absl::Now() - start, absl::Seconds(2));
  EXPECT_EQ(server.seen()[0].map_version, 7u);
  EXPECT_TRUE(cluster.Finish().ok());
}

}  // namespace
}  // namespace petrel
