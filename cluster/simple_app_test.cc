#include "cluster/simple_app.h"

#include <set>
#include <string>

#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"

#include "cluster/testing/van_cluster.h"

namespace petrel {
namespace {

constexpr int kApp = 5;

TEST(SimpleAppTest, RequestReachesEveryGroupMemberAndResponsesComeBack) {
  VanCluster cluster(ClusterOfSize(2, 2));
  ASSERT_TRUE(cluster.Start().ok());
  std::vector<std::unique_ptr<SimpleApp>> servers;
  for (int i = 0; i < 2; ++i) {
    servers.push_back(std::make_unique<SimpleApp>(kApp, 0, cluster.server(i)));
    servers.back()->set_request_handler(
        [](const SimpleData& d, SimpleApp* app) {
          EXPECT_EQ(d.head, 3);
          app->Response(d, d.body + " pong").IgnoreError();
        });
    ASSERT_TRUE(servers.back()->Start().ok());
  }
  absl::Mutex mu;
  std::set<std::pair<int, std::string>> answers;
  // After what its handler touches, so it is destroyed first: the van thread
  // calls the handler until then.
  SimpleApp client(kApp, 0, cluster.worker(0));
  client.set_response_handler([&](const SimpleData& d, SimpleApp*) {
    absl::MutexLock lock(&mu);
    answers.insert({d.sender, d.body});
  });
  ASSERT_TRUE(client.Start().ok());
  int ts = client.Request(3, "ping", kServerGroup);
  ASSERT_TRUE(client.Wait(ts, absl::Seconds(10)).ok());
  absl::MutexLock lock(&mu);
  EXPECT_EQ(answers, (std::set<std::pair<int, std::string>>{
                         {ServerRankToId(0), "ping pong"},
                         {ServerRankToId(1), "ping pong"}}));
}

TEST(SimpleAppTest, WaitNamesTheNodeThatDidNotAnswer) {
  VanCluster cluster(ClusterOfSize(2, 2));
  ASSERT_TRUE(cluster.Start().ok());
  SimpleApp silent(kApp, 0, cluster.server(1));
  silent.set_request_handler([](const SimpleData&, SimpleApp*) {});
  ASSERT_TRUE(silent.Start().ok());
  SimpleApp answering(kApp, 0, cluster.server(0));  // default: empty answer
  ASSERT_TRUE(answering.Start().ok());
  SimpleApp client(kApp, 0, cluster.worker(1));
  ASSERT_TRUE(client.Start().ok());
  int ts = client.Request(1, "", kServerGroup);
  absl::Status s = client.Wait(ts, absl::Milliseconds(300));
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_NE(s.message().find("10 (server 1)"), std::string::npos) << s;
  EXPECT_EQ(s.message().find("8 (server 0)"), std::string::npos) << s;
}

}  // namespace
}  // namespace petrel
