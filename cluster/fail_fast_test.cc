// Fail-fast waits: the scheduler's NODE_DEAD notice fails the requests that
// wait for the dead node at once, with Unavailable naming it; a failed
// TERMINATE fails every pending request; a request to a node already
// declared dead fails when it is opened; a signal's Interrupt and the
// node's stop abandon every pending request. Also the resend backoff.
#include <memory>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "base/testing/wait_until.h"
#include "cluster/customer.h"
#include "cluster/postoffice.h"
#include "cluster/testing/van_cluster.h"
#include "van/loopback_van.h"

namespace petrel {
namespace {

using ::testing::HasSubstr;

constexpr int kApp = 7;  // no server handles it: requests stay unanswered
constexpr absl::Duration kLongTimeout = absl::Seconds(60);
const char kReason[] = "node 8 (server 0 at 127.0.0.1:1) died: test";

// Sends control `cmd` from the scheduler to worker 0.
void Notify(VanCluster& cluster, pb::Control control) {
  Message msg;
  msg.meta.set_recipient(WorkerRankToId(0));
  msg.meta.set_request(false);
  *msg.meta.mutable_control() = std::move(control);
  ASSERT_TRUE(cluster.scheduler()->Send(std::move(msg)).ok());
}

pb::Control NodeDead(int id) {
  pb::Control c;
  c.set_cmd(pb::COMMAND_NODE_DEAD);
  c.add_nodes()->set_id(id);
  c.set_reason(kReason);
  return c;
}

// Opens a request to `recipients` and sends it each part.
int Request(Customer& c, const std::vector<int>& recipients,
            int* completions = nullptr) {
  int ts = c.NewRequest(recipients, [completions](int) {
    if (completions != nullptr) ++*completions;
  });
  for (int r : recipients) {
    Message m;
    m.meta.set_recipient(r);
    m.meta.set_timestamp(ts);
    c.SendRequest(std::move(m)).IgnoreError();
  }
  return ts;
}

TEST(FailFastTest, NodeDeadNoticeFailsTheWaitsOnThatNodeAtOnce) {
  VanCluster cluster(ClusterOfSize(2, 1));
  ASSERT_TRUE(cluster.Start().ok());
  Customer c(kApp, 0, cluster.worker(0));
  ASSERT_TRUE(c.Start().ok());
  int completions = 0;
  const int on_dead = Request(c, {ServerRankToId(0)}, &completions);
  const int on_both = Request(c, {ServerRankToId(1), ServerRankToId(0)});
  const int on_live = Request(c, {ServerRankToId(1)});
  absl::Status waited;
  absl::Duration took;
  std::thread waiter([&] {
    const absl::Time start = absl::Now();
    waited = c.Wait(on_dead, kLongTimeout);
    took = absl::Now() - start;
  });
  Notify(cluster, NodeDead(ServerRankToId(0)));
  waiter.join();
  EXPECT_EQ(waited.code(), absl::StatusCode::kUnavailable) << waited;
  EXPECT_EQ(waited.message(), kReason);
  EXPECT_LT(took, absl::Seconds(10));
  EXPECT_EQ(completions, 1);  // its completion handler ran
  // The notice fails the requests one after another (each one's handler,
  // then its wait), so this one may still be in hand when the first wait
  // returns: it fails too, without waiting for its answer from server 1.
  EXPECT_EQ(c.Wait(on_both, kLongTimeout).code(),
            absl::StatusCode::kUnavailable);
  EXPECT_FALSE(c.IsComplete(on_live));
  EXPECT_EQ(c.Wait(on_live, absl::Milliseconds(1)).code(),
            absl::StatusCode::kDeadlineExceeded);
  // Known dead: a new request to it fails when opened.
  EXPECT_THAT(cluster.worker(0)
                  ->CheckAlive({ServerRankToId(1), ServerRankToId(0)})
                  .message(),
              HasSubstr("died: test"));
  EXPECT_TRUE(cluster.worker(0)->CheckAlive({ServerRankToId(1)}).ok());
  int later_completions = 0;
  const int later = Request(c, {ServerRankToId(0)}, &later_completions);
  EXPECT_EQ(later_completions, 1);
  EXPECT_EQ(c.Wait(later, absl::ZeroDuration()).code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(cluster.worker(0)->van()->pending_requests(), 1);  // on_live
}

TEST(FailFastTest, FailedTerminateFailsEveryPendingRequest) {
  VanCluster cluster(ClusterOfSize(1, 1));
  ASSERT_TRUE(cluster.Start().ok());
  Customer c(kApp, 0, cluster.worker(0));
  ASSERT_TRUE(c.Start().ok());
  const int ts = Request(c, {ServerRankToId(0)});
  absl::Status waited;
  std::thread waiter([&] { waited = c.Wait(ts, kLongTimeout); });
  pb::Control terminate;
  terminate.set_cmd(pb::COMMAND_TERMINATE);
  terminate.set_failed(true);
  terminate.set_reason("node 9 died");
  Notify(cluster, terminate);
  waiter.join();
  EXPECT_EQ(waited.code(), absl::StatusCode::kAborted);
  EXPECT_EQ(waited.message(), "the job failed: node 9 died");
}

// The failed job's TERMINATE follows a NODE_DEAD at once: a request opened
// after both still names the dead node (Unavailable), and one to a live
// node gets the job's failure (Aborted), whichever the caller raced.
TEST(FailFastTest, RequestToADeadNodeAfterTheJobFailedStillNamesIt) {
  VanCluster cluster(ClusterOfSize(2, 1));
  ASSERT_TRUE(cluster.Start().ok());
  Customer c(kApp, 0, cluster.worker(0));
  ASSERT_TRUE(c.Start().ok());
  const int pending = Request(c, {ServerRankToId(1)});
  Notify(cluster, NodeDead(ServerRankToId(0)));
  pb::Control terminate;
  terminate.set_cmd(pb::COMMAND_TERMINATE);
  terminate.set_failed(true);
  terminate.set_reason(kReason);
  Notify(cluster, terminate);
  // The TERMINATE came: the pending request was failed with it.
  EXPECT_EQ(c.Wait(pending, kLongTimeout).code(), absl::StatusCode::kAborted);
  const absl::Status to_dead =
      cluster.worker(0)->CheckAlive({ServerRankToId(1), ServerRankToId(0)});
  EXPECT_EQ(to_dead.code(), absl::StatusCode::kUnavailable) << to_dead;
  EXPECT_EQ(to_dead.message(), kReason);
  const int later = Request(c, {ServerRankToId(0)});
  EXPECT_EQ(c.Wait(later, absl::ZeroDuration()).code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(cluster.worker(0)->CheckAlive({ServerRankToId(1)}).code(),
            absl::StatusCode::kAborted);
}

// A signal (Postoffice::Interrupt) abandons every pending request, so a
// wait (and its resends) ends at once, and fails a request opened later
// when it is opened; so does the node's stop.
TEST(FailFastTest, InterruptAbandonsEveryPendingAndLaterRequest) {
  VanCluster cluster(ClusterOfSize(1, 1));
  ASSERT_TRUE(cluster.Start().ok());
  Customer c(kApp, 0, cluster.worker(0));
  ASSERT_TRUE(c.Start().ok());
  const int ts = Request(c, {ServerRankToId(0)});
  absl::Status waited;
  absl::Duration took;
  std::thread waiter([&] {
    const absl::Time start = absl::Now();
    waited = c.Wait(ts, kLongTimeout);
    took = absl::Now() - start;
  });
  cluster.worker(0)->Interrupt("SIGTERM received");
  waiter.join();
  EXPECT_EQ(waited.code(), absl::StatusCode::kAborted);
  EXPECT_EQ(waited.message(), "SIGTERM received");
  EXPECT_LT(took, absl::Seconds(10));
  int completions = 0;
  const int later = Request(c, {kSchedulerId}, &completions);
  EXPECT_EQ(completions, 1);
  EXPECT_EQ(c.Wait(later, absl::ZeroDuration()).message(), "SIGTERM received");
  EXPECT_EQ(cluster.worker(0)->van()->pending_requests(), 0);
}

TEST(FailFastTest, StopAbandonsEveryPendingRequest) {
  VanCluster cluster(ClusterOfSize(1, 1));
  ASSERT_TRUE(cluster.Start().ok());
  Customer c(kApp, 0, cluster.worker(0));
  ASSERT_TRUE(c.Start().ok());
  const int ts = Request(c, {ServerRankToId(0)});
  absl::Status waited;
  std::thread waiter([&] { waited = c.Wait(ts, kLongTimeout); });
  cluster.worker(0)->Stop();
  waiter.join();
  EXPECT_EQ(waited.code(), absl::StatusCode::kAborted);
  EXPECT_EQ(waited.message(), "the node stopped");
}

TEST(FailFastTest, LateAnswersToAFailedRequestAreIgnored) {
  MetricsRegistry metrics;
  LoopbackNetwork network;
  Postoffice po(PostofficeOptions(),
                std::make_unique<LoopbackVan>(&network, VanOptions(), &metrics),
                &metrics);
  Customer c(kApp, 0, &po);
  int responses = 0;
  c.set_response_handler([&](Message&&) { ++responses; });
  const int ts = c.NewRequest({8, 10});
  c.FailRequestsTo(10, absl::UnavailableError("gone"));
  Message answer;
  answer.meta.set_sender(8);
  answer.meta.set_timestamp(ts);
  c.Accept(std::move(answer));
  EXPECT_EQ(responses, 0);
  EXPECT_EQ(c.Wait(ts, absl::ZeroDuration()).message(), "gone");
  // Waiting again reports the failure again, never success.
  EXPECT_EQ(c.Wait(ts, absl::ZeroDuration()).message(), "gone");
}

TEST(CustomerResendTest, BacksOffUpToTheLongestInterval) {
  MetricsRegistry metrics;
  LoopbackNetwork network;
  Postoffice po(PostofficeOptions(),
                std::make_unique<LoopbackVan>(&network, VanOptions(), &metrics),
                &metrics);
  CustomerOptions options;
  options.resend_timeout = absl::Milliseconds(100);
  options.max_resend_interval = absl::Milliseconds(400);
  options.max_resends = 4;
  Customer c(kApp, 0, &po, options);
  ASSERT_TRUE(c.Start().ok());
  Counter* resent = metrics.GetCounter("petrel_customer_resent_total", "");
  Request(c, {8});  // the van is not started: every send fails
  const absl::Time t0 = absl::Now();
  std::vector<int64_t> seen;
  // Resends at 100, +200, +400, +400 ms after the first send, then none.
  for (int ms : {100, 250, 300, 650, 700, 1050, 1100, 5000}) {
    c.Tick(t0 + absl::Milliseconds(ms));
    seen.push_back(resent->value());
  }
  EXPECT_EQ(seen, (std::vector<int64_t>{1, 1, 2, 2, 3, 3, 4, 4}));
}

}  // namespace
}  // namespace petrel
