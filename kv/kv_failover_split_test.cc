// A worker's pushes to a server that died are cut by the key-range map
// after the failover, one piece per new primary (KVWorker::SplitMoved), and
// each piece is applied once by every live replica of its ranges: the
// servers tell the pieces of one push apart by the key ranges they hold
// (ReplicaDedup), so a server that leads one piece's ranges and backs
// another's applies both (docs/failures.md, "Replicated servers").
//
// The job: 4 servers, the map of a 3-server job with R = 2 after a fourth
// server was added (its ranges' chains are [3, old primary]: they go to
// several servers when it dies, none of them necessarily its ring
// successor). Server 3 takes the worker's pushes and never answers nor
// forwards them (it died before); the scheduler then declares it dead.
#include <memory>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"

#include "base/testing/wait_until.h"
#include "cluster/customer.h"
#include "cluster/key_range_map.h"
#include "cluster/postoffice.h"
#include "cluster/replica_map.h"
#include "cluster/testing/van_cluster.h"
#include "kv/kv_codec.h"
#include "kv/kv_server.h"
#include "kv/kv_worker.h"

namespace petrel {
namespace {

constexpr int kApp = 0;
constexpr absl::Duration kTimeout = absl::Seconds(20);

// The map after the add, then without the added server (rank 3).
ReplicaMap AddedThenDead() {
  absl::StatusOr<ReplicaMap> added =
      ReplicaMap::Initial(KeyRangeMap::Uniform(3, 8).value(), 2)
          ->WithServerAdded();
  EXPECT_TRUE(added.ok()) << added.status();
  absl::StatusOr<ReplicaMap> failed = added->WithoutServer(3);
  EXPECT_TRUE(failed.ok()) << failed.status();
  return *failed;
}

// The scheduler tells node `to` that server 3 died, with `map`.
void NodeDead(VanCluster& cluster, int to, const ReplicaMap& map) {
  Message msg;
  msg.meta.set_recipient(to);
  pb::Control* c = msg.meta.mutable_control();
  c->set_cmd(pb::COMMAND_NODE_DEAD);
  c->add_nodes()->set_id(ServerRankToId(3));
  c->set_reason("test: server 3 killed");
  map.ToControl(c);
  c->set_successor(ServerRankToId(map.SuccessorOf(3)));
  ASSERT_TRUE(cluster.scheduler()->Send(std::move(msg)).ok());
}

// Server 3: takes pushes and drops them (as if it died before applying or
// forwarding any), counting them.
class Swallower {
 public:
  explicit Swallower(Postoffice* po) : server_(kApp, po) {
    server_.set_request_handler(
        [this](const KVMeta&, const KVPairs<float>&, KVServer<float>*) {
          absl::MutexLock lock(&mu_);
          ++taken_;
        });
  }
  absl::Status Start() { return server_.Start(); }
  int taken() {
    absl::MutexLock lock(&mu_);
    return taken_;
  }

 private:
  absl::Mutex mu_;
  int taken_ ABSL_GUARDED_BY(mu_) = 0;
  // Last, so it is destroyed first: the van thread calls its handler until
  // then.
  KVServer<float> server_;
};

// Pulls `keys` from server node `id` itself (primary or backup), bypassing
// the routing, through a customer of the worker node.
std::vector<float> PullFrom(Customer& c, absl::Mutex& mu,
                            std::vector<float>& answer, int id,
                            const std::vector<Key>& keys) {
  {
    absl::MutexLock lock(&mu);
    answer.clear();
  }
  const int ts = c.NewRequest({id});
  KVMeta kv;
  kv.pull = true;
  Message m;
  m.meta.set_recipient(id);
  m.meta.set_timestamp(ts);
  EncodeKvRequest(kv, &m.meta);
  m.AddData(SArray<Key>::CopyOf(keys));
  EXPECT_TRUE(c.SendRequest(std::move(m)).ok());
  EXPECT_TRUE(c.Wait(ts, kTimeout).ok());
  absl::MutexLock lock(&mu);
  return answer;
}

TEST(KVFailoverSplitTest, MovedPushesReachEveryNewChainOnce) {
  VanCluster cluster(ClusterOfSize(4, 1));
  ASSERT_TRUE(cluster.Start().ok());
  std::vector<std::unique_ptr<KVStoreHandler<float>>> stores;
  std::vector<std::unique_ptr<KVServer<float>>> servers;
  for (int i = 0; i < 3; ++i) {
    stores.push_back(std::make_unique<KVStoreHandler<float>>());
    servers.push_back(
        std::make_unique<KVServer<float>>(kApp, cluster.server(i)));
    KVStoreHandler<float>* store = stores.back().get();
    servers.back()->set_request_handler(
        [store](const KVMeta& m, const KVPairs<float>& d, KVServer<float>* s) {
          (*store)(m, d, s);
        });
    ASSERT_TRUE(servers.back()->Start().ok());
  }
  Swallower dead(cluster.server(3));
  ASSERT_TRUE(dead.Start().ok());
  CustomerOptions options;
  options.resend_timeout = absl::Hours(1);  // kept for moving, not resent
  KVWorker<float> worker(kApp, 0, cluster.worker(0), options);
  ASSERT_TRUE(worker.Start().ok());

  // Keys the worker's map (before the failover) sends to server 3.
  const KeyRangeMap before = cluster.worker(0)->key_ranges();
  std::vector<Key> keys;
  for (Key k = 0; keys.size() < 400; ++k) {
    if (before.OwnerOf(k) == 3) keys.push_back(k);
  }
  const SArray<Key> k = SArray<Key>::CopyOf(keys);
  const int push1 =
      worker.Push(k, SArray<float>::CopyOf(std::vector<float>(keys.size(), 1)));
  const int push2 =
      worker.Push(k, SArray<float>::CopyOf(std::vector<float>(keys.size(), 2)));
  ASSERT_TRUE(WaitUntil([&] { return dead.taken() == 2; }));

  const ReplicaMap after = AddedThenDead();
  for (int i = 0; i < 3; ++i) NodeDead(cluster, ServerRankToId(i), after);
  NodeDead(cluster, cluster.worker(0)->my_id(), after);
  ASSERT_TRUE(worker.Wait(push1, kTimeout).ok());
  ASSERT_TRUE(worker.Wait(push2, kTimeout).ok());

  // The moved pushes' keys lead to several servers now.
  std::vector<int> primaries(3, 0);
  for (Key key : keys) ++primaries[after.ranges().OwnerOf(key)];
  int leading = 0;
  for (int n : primaries) leading += n > 0;
  ASSERT_GE(leading, 2) << "the failover does not split: change the keys";

  // Through the routing (the new primaries): every key holds 3, once.
  SArray<float> vals;
  ASSERT_TRUE(worker.Wait(worker.Pull(k, &vals), kTimeout).ok());
  ASSERT_EQ(vals.size(), keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    EXPECT_EQ(vals[i], 3.0f) << "key " << keys[i];
  }
  // Every live replica of each key's range has it, once.
  absl::Mutex mu;
  std::vector<float> answer;
  // After what its handler touches, so it is destroyed first: the van thread
  // calls the handler until then.
  Customer reader(kApp, 1, cluster.worker(0));
  reader.set_response_handler([&](Message&& m) {
    absl::MutexLock lock(&mu);
    SArray<float> v(m.data[0]);
    answer.assign(v.begin(), v.end());
  });
  ASSERT_TRUE(reader.Start().ok());
  int backed = 0;
  for (int rank = 0; rank < 3; ++rank) {
    std::vector<Key> held;
    for (Key key : keys) {
      for (int r : after.ChainOf(after.ranges().RangeOf(key))) {
        if (r == rank) held.push_back(key);
      }
    }
    if (held.empty()) continue;
    const std::vector<float> got =
        PullFrom(reader, mu, answer, ServerRankToId(rank), held);
    ASSERT_EQ(got.size(), held.size()) << "server " << rank;
    for (size_t i = 0; i < held.size(); ++i) {
      EXPECT_EQ(got[i], 3.0f) << "key " << held[i] << " on server " << rank;
    }
    backed += static_cast<int>(held.size());
  }
  EXPECT_GT(backed, static_cast<int>(keys.size()));  // backups too
}

}  // namespace
}  // namespace petrel
