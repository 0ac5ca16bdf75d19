#include "cluster/postoffice.h"

#include <memory>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "base/testing/wait_until.h"
#include "cluster/customer.h"
#include "cluster/testing/van_cluster.h"
#include "van/loopback_van.h"

namespace petrel {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

struct Standalone {
  explicit Standalone(PostofficeOptions options)
      : po(options,
           std::make_unique<LoopbackVan>(&network, VanOptions(), &metrics),
           &metrics) {}
  LoopbackNetwork network;
  MetricsRegistry metrics;
  Postoffice po;
};

PostofficeOptions Options(pb::Role role, int servers, int workers) {
  return TestNodeOptions(role, servers, workers, /*scheduler_port=*/0);
}

TEST(PostofficeTest, GroupIdsExpandToMembers) {
  Standalone s(Options(pb::ROLE_WORKER, 2, 3));
  EXPECT_THAT(s.po.GetNodeIds(kServerGroup), ElementsAre(8, 10));
  EXPECT_THAT(s.po.GetNodeIds(kWorkerGroup), ElementsAre(9, 11, 13));
  EXPECT_THAT(s.po.GetNodeIds(kSchedulerGroup), ElementsAre(1));
  EXPECT_THAT(s.po.GetNodeIds(kAllGroup), ElementsAre(1, 8, 10, 9, 11, 13));
  EXPECT_THAT(s.po.GetNodeIds(kServerGroup | kSchedulerGroup),
              ElementsAre(1, 8, 10));
  EXPECT_THAT(s.po.GetNodeIds(11), ElementsAre(11));
}

TEST(PostofficeTest, JoinTimeoutNamesTheSchedulerAddress) {
  PostofficeOptions o = Options(pb::ROLE_SERVER, 1, 1);
  o.scheduler_host = "127.0.0.1";
  o.scheduler_port = 45678;  // nothing listens there on this network
  o.join_timeout = absl::Milliseconds(100);
  Standalone s(o);
  absl::Status st = s.po.Start();
  EXPECT_EQ(st.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(st.message(), HasSubstr("127.0.0.1:45678"));
}

TEST(PostofficeTest, OneRequestHandlerPerApp) {
  Standalone s(Options(pb::ROLE_SERVER, 1, 1));
  auto handler = [](Message&&, bool) {};
  Customer a(3, 0, &s.po);
  a.set_request_handler(handler);
  ASSERT_TRUE(a.Start().ok());
  Customer b(3, 1, &s.po);
  b.set_request_handler(handler);
  EXPECT_EQ(b.Start().code(), absl::StatusCode::kAlreadyExists);
  Customer c(3, 2, &s.po);  // no handler: only receives responses
  EXPECT_TRUE(c.Start().ok());
  a.Stop();
  EXPECT_TRUE(b.Start().ok());  // the place is free again
}

TEST(PostofficeTest, InterruptWakesWaitersWithAborted) {
  Standalone s(Options(pb::ROLE_SERVER, 1, 1));
  std::thread interrupter([&] { s.po.Interrupt("signal 15"); });
  absl::Status st = s.po.WaitForTerminate(absl::Seconds(10));
  interrupter.join();
  EXPECT_EQ(st.code(), absl::StatusCode::kAborted);
  EXPECT_THAT(st.message(), HasSubstr("signal 15"));
}

TEST(PostofficeTest, CountsMessagesForUnknownApps) {
  VanCluster cluster(ClusterOfSize(1, 1));
  ASSERT_TRUE(cluster.Start().ok());
  Customer sender(7, 0, cluster.worker(0));
  ASSERT_TRUE(sender.Start().ok());
  int ts = sender.NewRequest({8});
  Message m;
  m.meta.set_recipient(8);
  m.meta.set_timestamp(ts);
  ASSERT_TRUE(sender.SendRequest(std::move(m)).ok());
  EXPECT_TRUE(WaitUntil([&] {
    return cluster.server_metrics(0)
               ->Value("petrel_van_messages_rejected_total",
                       {{"reason", "unknown_customer"}})
               .value_or(0) == 1;
  }));
  EXPECT_TRUE(cluster.Finish().ok());
}

TEST(PostofficeTest, WorkersCountPendingRequestsServersServeThem) {
  VanCluster cluster(ClusterOfSize(1, 1));
  ASSERT_TRUE(cluster.Start().ok());
  EXPECT_EQ(cluster.server(0)->van()->pending_requests(), -1);
  Van* van = cluster.worker(0)->van();
  EXPECT_EQ(van->pending_requests(), 0);
  Customer sender(7, 0, cluster.worker(0));
  ASSERT_TRUE(sender.Start().ok());
  sender.NewRequest({8});  // the server has no app 7: never answered
  EXPECT_EQ(van->pending_requests(), 1);
  const int ts = sender.NewRequest({});  // complete at once
  EXPECT_TRUE(sender.IsComplete(ts));
  EXPECT_EQ(van->pending_requests(), 1);
  EXPECT_TRUE(cluster.Finish().ok());
}

TEST(PostofficeTest, NodesLearnTheTableAndRanges) {
  VanCluster cluster(ClusterOfSize(3, 2));
  ASSERT_TRUE(cluster.Start().ok());
  for (int i = 0; i < 2; ++i) {
    Postoffice* w = cluster.worker(i);
    EXPECT_EQ(w->my_id(), WorkerRankToId(i));
    EXPECT_EQ(w->my_rank(), i);
    EXPECT_EQ(w->nodes().size(), 6u);
    EXPECT_EQ(w->key_ranges().num_servers(), 3);
  }
  EXPECT_EQ(cluster.server(2)->my_id(), ServerRankToId(2));
  EXPECT_TRUE(cluster.Finish().ok());
}

}  // namespace
}  // namespace petrel
