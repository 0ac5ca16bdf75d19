#include "cluster/customer.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "cluster/postoffice.h"
#include "cluster/testing/van_cluster.h"
#include "van/loopback_van.h"

namespace petrel {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr int kApp = 1;

// A Postoffice that never starts: enough for Customer's bookkeeping.
struct OfflineNode {
  OfflineNode()
      : po(PostofficeOptions(),
           std::make_unique<LoopbackVan>(&network, VanOptions(), &metrics),
           &metrics) {}
  LoopbackNetwork network;
  MetricsRegistry metrics;
  Postoffice po;
};

Message Request(int sender, int customer_id, uint64_t seq) {
  Message m;
  m.meta.set_request(true);
  m.meta.set_sender(sender);
  m.meta.set_customer_id(customer_id);
  m.meta.set_seq(seq);
  return m;
}

Message Response(int sender, int timestamp) {
  Message m;
  m.meta.set_request(false);
  m.meta.set_sender(sender);
  m.meta.set_timestamp(timestamp);
  return m;
}

TEST(CustomerTest, DetectsDuplicateRequestsPerSenderAndCustomer) {
  OfflineNode node;
  Customer c(kApp, 0, &node.po);
  std::vector<bool> dups;
  c.set_request_handler(
      [&](Message&&, bool duplicate) { dups.push_back(duplicate); });
  c.Accept(Request(9, 0, 1));
  c.Accept(Request(9, 0, 1));   // same sender, customer and seq
  c.Accept(Request(11, 0, 1));  // another sender
  c.Accept(Request(9, 1, 1));   // another customer of the same sender
  c.Accept(Request(9, 0, 3));   // ahead of 2
  c.Accept(Request(9, 0, 2));   // fills the gap
  c.Accept(Request(9, 0, 3));
  c.Accept(Request(9, 0, 2));
  c.Accept(Request(9, 0, 0));  // seq 0: not sequenced, never a duplicate
  c.Accept(Request(9, 0, 0));
  EXPECT_EQ(dups, (std::vector<bool>{false, true, false, false, false, false,
                                     true, true, false, false}));
}

TEST(CustomerTest, HandlesRequestsInSequenceOrderWhateverTheArrivalOrder) {
  OfflineNode node;
  Customer c(kApp, 0, &node.po);
  std::vector<std::pair<uint64_t, bool>> handled;
  c.set_request_handler([&](Message&& m, bool duplicate) {
    handled.emplace_back(m.meta.seq(), duplicate);
  });
  using Handled = std::vector<std::pair<uint64_t, bool>>;
  c.Accept(Request(9, 0, 3));  // held: 1 and 2 are missing
  c.Accept(Request(9, 0, 5));
  c.Accept(Request(9, 0, 3));  // a copy of a held one: dropped
  EXPECT_EQ(handled, Handled{});
  c.Accept(Request(9, 0, 1));
  EXPECT_EQ(handled, (Handled{{1, false}}));
  c.Accept(Request(9, 0, 2));  // fills the gap: 2, then the held 3
  EXPECT_EQ(handled, (Handled{{1, false}, {2, false}, {3, false}}));
  c.Accept(Request(9, 0, 4));
  c.Accept(Request(9, 0, 3));  // handled before: a duplicate
  EXPECT_EQ(handled, (Handled{{1, false},
                              {2, false},
                              {3, false},
                              {4, false},
                              {5, false},
                              {3, true}}));
}

TEST(CustomerTest, SkipsAGapWhenTooManyRequestsWaitForIt) {
  OfflineNode node;
  Customer c(kApp, 0, &node.po);
  size_t handled = 0;
  uint64_t last = 0;
  c.set_request_handler([&](Message&& m, bool) {
    EXPECT_GT(m.meta.seq(), last);  // still in order
    last = m.meta.seq();
    ++handled;
  });
  // Seq 1 never comes; the per-stream bound is 16384 held requests.
  for (uint64_t seq = 2; seq <= 16385; ++seq) c.Accept(Request(9, 0, seq));
  EXPECT_EQ(handled, 0u);
  c.Accept(Request(9, 0, 16386));
  EXPECT_EQ(handled, 16385u);
  EXPECT_EQ(last, 16386u);
}

// A customer that waits at most 1 s for a missing request and records
// what it handles: (seq, duplicate).
class CustomerReorderTest : public ::testing::Test {
 protected:
  using Handled = std::vector<std::pair<uint64_t, bool>>;
  static CustomerOptions Options() {
    CustomerOptions options;
    options.max_reorder_wait = absl::Seconds(1);
    return options;
  }
  void SetUp() override {
    c.set_request_handler([this](Message&& m, bool duplicate) {
      handled.emplace_back(m.meta.seq(), duplicate);
    });
  }
  OfflineNode node;
  Customer c{kApp, 0, &node.po, Options()};
  Handled handled;
};

TEST_F(CustomerReorderTest, DropsARequestTooFarAheadInsteadOfSkippingToIt) {
  c.Accept(Request(9, 0, uint64_t{1} << 40));  // bogus: never held
  c.Tick(absl::Now() + absl::Seconds(2));
  c.Accept(Request(9, 0, 1));
  c.Accept(Request(9, 0, 2));
  EXPECT_EQ(handled, (Handled{{1, false}, {2, false}}));
}

TEST_F(CustomerReorderTest, SkipsAGapThatOutlastsMaxReorderWait) {
  c.Accept(Request(9, 0, 2));
  c.Accept(Request(9, 0, 4));
  c.Tick(absl::Now());  // not waited long enough yet
  EXPECT_EQ(handled, Handled{});
  c.Tick(absl::Now() + absl::Seconds(2));
  EXPECT_EQ(handled, (Handled{{2, false}, {4, false}}));
  // Late arrivals from the skipped gap count as handled before.
  c.Accept(Request(9, 0, 1));
  c.Accept(Request(9, 0, 5));
  EXPECT_EQ(handled, (Handled{{2, false}, {4, false}, {1, true}, {5, false}}));
}

TEST(CustomerTest, WaitTimeoutNamesNodesThatDidNotAnswer) {
  OfflineNode node;
  Customer c(kApp, 0, &node.po);
  int ts = c.NewRequest({8, 10, 9});
  c.Accept(Response(10, ts));
  absl::Status s = c.Wait(ts, absl::Milliseconds(50));
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(s.message(), HasSubstr("node(s) 8 (server 0), 9 (worker 0)"));
  EXPECT_THAT(s.message(), Not(HasSubstr("10")));
  EXPECT_FALSE(c.IsComplete(ts));
  // A late answer still completes the request.
  c.Accept(Response(8, ts));
  c.Accept(Response(9, ts));
  EXPECT_TRUE(c.Wait(ts, absl::Seconds(10)).ok());
  EXPECT_TRUE(c.IsComplete(ts));
}

TEST(CustomerTest, IgnoresDuplicateAndUnexpectedResponses) {
  OfflineNode node;
  Customer c(kApp, 0, &node.po);
  int responses = 0;
  int completions = 0;
  c.set_response_handler([&](Message&&) { ++responses; });
  int ts = c.NewRequest({8, 10}, [&](int) { ++completions; });
  c.Accept(Response(8, ts));
  c.Accept(Response(8, ts));      // duplicate
  c.Accept(Response(12, ts));     // not asked
  c.Accept(Response(8, ts + 1));  // no such request
  EXPECT_EQ(responses, 1);
  EXPECT_EQ(completions, 0);
  EXPECT_FALSE(c.IsComplete(ts));
  c.Accept(Response(10, ts));
  c.Accept(Response(10, ts));  // after completion
  EXPECT_EQ(responses, 2);
  EXPECT_EQ(completions, 1);
  EXPECT_TRUE(c.IsComplete(ts));
}

Message PartResponse(int sender, int timestamp, int part) {
  Message m = Response(sender, timestamp);
  m.meta.set_part(part);
  return m;
}

TEST(CustomerTest, RequestInPartsCompletesWhenEveryPartIsAnswered) {
  OfflineNode node;
  Customer c(kApp, 0, &node.po);
  int completions = 0;
  // Three messages to node 8 (parts 0, 1, 2) and one to node 10.
  int ts = c.NewRequest({8, 10, 8, 8}, [&](int) { ++completions; });
  c.Accept(PartResponse(8, ts, 2));
  c.Accept(PartResponse(8, ts, 2));  // duplicate
  c.Accept(PartResponse(8, ts, 3));  // no such part
  c.Accept(PartResponse(10, ts, 0));
  c.Accept(PartResponse(8, ts, 0));
  EXPECT_EQ(completions, 0);
  absl::Status s = c.Wait(ts, absl::Milliseconds(20));
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(s.message(), HasSubstr("node(s) 8 (server 0)"));
  c.Accept(PartResponse(8, ts, 1));
  EXPECT_EQ(completions, 1);
  EXPECT_TRUE(c.Wait(ts, absl::ZeroDuration()).ok());
}

TEST(CustomerTest, HasPendingToNamesNodesThatStillOweAnAnswer) {
  OfflineNode node;
  Customer c(kApp, 0, &node.po);
  EXPECT_FALSE(c.HasPendingTo(10));
  // Pending from the moment the request is made (before it is sent).
  int ts = c.NewRequest({8, 10});
  EXPECT_TRUE(c.HasPendingTo(8));
  EXPECT_TRUE(c.HasPendingTo(10));
  EXPECT_FALSE(c.HasPendingTo(12));
  c.Accept(Response(10, ts));
  EXPECT_FALSE(c.HasPendingTo(10));
  EXPECT_TRUE(c.HasPendingTo(8));
  c.Accept(Response(8, ts));
  EXPECT_FALSE(c.HasPendingTo(8));
}

TEST(CustomerTest, RequestWithoutRecipientsCompletesAtOnce) {
  OfflineNode node;
  Customer c(kApp, 0, &node.po);
  int completed = -1;
  int ts = c.NewRequest({}, [&](int t) { completed = t; });
  EXPECT_EQ(completed, ts);
  EXPECT_TRUE(c.Wait(ts, absl::ZeroDuration()).ok());
}

TEST(CustomerTest, CompletionHandlerRunsBeforeWaitReturns) {
  OfflineNode node;
  Customer c(kApp, 0, &node.po);
  absl::Notification entered, release;
  std::atomic<bool> finished{false};
  int ts = c.NewRequest({8}, [&](int) {
    entered.Notify();
    release.WaitForNotification();
    finished = true;
  });
  std::thread van([&] { c.Accept(Response(8, ts)); });
  entered.WaitForNotification();
  // The handler is still running: the request is not complete yet.
  EXPECT_EQ(c.Wait(ts, absl::Milliseconds(50)).code(),
            absl::StatusCode::kDeadlineExceeded);
  EXPECT_FALSE(c.IsComplete(ts));
  release.Notify();
  EXPECT_TRUE(c.Wait(ts, absl::Seconds(10)).ok());
  EXPECT_TRUE(finished);
  van.join();
}

TEST(CustomerTest, StartRejectsTakenIds) {
  OfflineNode node;
  Customer a(kApp, 0, &node.po);
  Customer b(kApp, 0, &node.po);
  ASSERT_TRUE(a.Start().ok());
  EXPECT_EQ(b.Start().code(), absl::StatusCode::kAlreadyExists);
  Customer other_customer(kApp, 1, &node.po);
  EXPECT_TRUE(other_customer.Start().ok());
}

// What a server-side customer saw of one request.
struct Seen {
  int sender;
  int customer_id;
  int timestamp;
  uint64_t seq;
  bool duplicate;
  int part;
};

// A server-side customer that records requests and answers them, except
// the first copy of each timestamp listed in `drop`.
class EchoServer {
 public:
  EchoServer(Postoffice* po, std::vector<int> drop = {})
      : drop_(std::move(drop)), customer_(kApp, 0, po) {
    customer_.set_request_handler([this](Message&& msg, bool duplicate) {
      bool answer = true;
      {
        absl::MutexLock lock(&mu_);
        seen_.push_back(Seen{msg.meta.sender(), msg.meta.customer_id(),
                             msg.meta.timestamp(), msg.meta.seq(), duplicate,
                             msg.meta.part()});
        auto it = std::find(drop_.begin(), drop_.end(), msg.meta.timestamp());
        if (it != drop_.end() && !duplicate) answer = false;
      }
      if (answer) {
        customer_.SendResponse(ReplyAddressOf(msg.meta), Message())
            .IgnoreError();
      }
    });
    EXPECT_TRUE(customer_.Start().ok());
  }
  std::vector<Seen> seen() {
    absl::MutexLock lock(&mu_);
    return seen_;
  }
  bool WaitForSeen(size_t n) {
    absl::MutexLock lock(&mu_);
    auto enough = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu_) -> bool {
      return seen_.size() >= n;
    };
    return mu_.AwaitWithTimeout(absl::Condition(&enough), absl::Seconds(10));
  }

 private:
  absl::Mutex mu_;
  std::vector<Seen> seen_ ABSL_GUARDED_BY(mu_);
  std::vector<int> drop_;
  // Last, so it is destroyed first: the van thread calls its handler until
  // then.
  Customer customer_;
};

// Opens a request to `recipients` and sends one message to each.
int SendTo(Customer& c, const std::vector<int>& recipients) {
  int ts = c.NewRequest(recipients);
  for (int r : recipients) {
    Message m;
    m.meta.set_recipient(r);
    m.meta.set_timestamp(ts);
    EXPECT_TRUE(c.SendRequest(std::move(m)).ok());
  }
  return ts;
}

std::vector<uint64_t> Seqs(const std::vector<Seen>& seen) {
  std::vector<uint64_t> out;
  for (const Seen& s : seen) out.push_back(s.seq);
  return out;
}

// Two servers answering with EchoServers, and a customer on worker 0.
struct EchoCluster {
  EchoCluster() : cluster(ClusterOfSize(2, 1)) {
    EXPECT_TRUE(cluster.Start().ok());
    s0 = std::make_unique<EchoServer>(cluster.server(0));
    s1 = std::make_unique<EchoServer>(cluster.server(1));
    c = std::make_unique<Customer>(kApp, 0, cluster.worker(0));
    EXPECT_TRUE(c->Start().ok());
  }
  VanCluster cluster;
  std::unique_ptr<EchoServer> s0, s1;
  std::unique_ptr<Customer> c;
};

TEST(CustomerTest, NumbersRequestsPerRecipient) {
  EchoCluster e;
  for (const std::vector<int>& to :
       std::vector<std::vector<int>>{{8}, {8, 10}, {10}, {8}}) {
    ASSERT_TRUE(e.c->Wait(SendTo(*e.c, to), absl::Seconds(10)).ok());
  }
  EXPECT_EQ(Seqs(e.s0->seen()), (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_EQ(Seqs(e.s1->seen()), (std::vector<uint64_t>{1, 2}));
  // Another customer of the same worker numbers its own stream, and the
  // server does not take its seq 1 for a duplicate.
  Customer c1(kApp, 1, e.cluster.worker(0));
  ASSERT_TRUE(c1.Start().ok());
  ASSERT_TRUE(c1.Wait(SendTo(c1, {8}), absl::Seconds(10)).ok());
  std::vector<Seen> seen = e.s0->seen();
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[3].customer_id, 1);
  EXPECT_EQ(seen[3].seq, 1u);
  EXPECT_FALSE(seen[3].duplicate);
  for (const Seen& s : seen) EXPECT_EQ(s.sender, 9);
  EXPECT_TRUE(e.cluster.Finish().ok());
}

TEST(CustomerTest, NumbersPartsPerRecipientAndMatchesTheirAnswers) {
  EchoCluster e;
  // The echo server answers each part with its part number; the request
  // completes only once all three parts to node 8 were answered.
  ASSERT_TRUE(e.c->Wait(SendTo(*e.c, {8, 10, 8, 8}), absl::Seconds(10)).ok());
  std::vector<int> parts;
  for (const Seen& seen : e.s0->seen()) parts.push_back(seen.part);
  EXPECT_EQ(parts, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(Seqs(e.s0->seen()), (std::vector<uint64_t>{1, 2, 3}));
  ASSERT_EQ(e.s1->seen().size(), 1u);
  EXPECT_EQ(e.s1->seen()[0].part, 0);
  EXPECT_TRUE(e.cluster.Finish().ok());
}

TEST(CustomerTest, TickResendsOnlyAfterResendTimeout) {
  VanCluster cluster(ClusterOfSize(2, 1));
  ASSERT_TRUE(cluster.Start().ok());
  EchoServer s0(cluster.server(0), /*drop=*/{0});
  CustomerOptions options;
  options.resend_timeout = absl::Hours(1);  // the van's ticks never resend
  Customer c(kApp, 0, cluster.worker(0), options);
  ASSERT_TRUE(c.Start().ok());
  int dropped = SendTo(c, {8});
  ASSERT_EQ(dropped, 0);
  ASSERT_TRUE(s0.WaitForSeen(1));
  c.Tick(absl::Now());  // too early: nothing is resent
  // Messages arrive in order, so a resend would show up before this one.
  ASSERT_TRUE(c.Wait(SendTo(c, {8}), absl::Seconds(10)).ok());
  ASSERT_EQ(s0.seen().size(), 2u);
  EXPECT_FALSE(c.IsComplete(dropped));
  c.Tick(absl::Now() + absl::Hours(2));
  ASSERT_TRUE(c.Wait(dropped, absl::Seconds(10)).ok());
  std::vector<Seen> seen = s0.seen();
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[2].timestamp, dropped);
  EXPECT_EQ(seen[2].seq, seen[0].seq);  // the same message again
  EXPECT_TRUE(seen[2].duplicate);
  EXPECT_TRUE(cluster.Finish().ok());
}

TEST(CustomerTest, ResendsUnansweredRequestOnTicks) {
  VanCluster cluster(ClusterOfSize(2, 1));
  ASSERT_TRUE(cluster.Start().ok());
  EchoServer s0(cluster.server(0), /*drop=*/{0});
  EchoServer s1(cluster.server(1));
  CustomerOptions options;
  options.resend_timeout = absl::Milliseconds(30);
  Customer c(kApp, 0, cluster.worker(0), options);
  ASSERT_TRUE(c.Start().ok());
  int ts = SendTo(c, {8, 10});
  ASSERT_TRUE(c.Wait(ts, absl::Seconds(10)).ok());
  std::vector<Seen> seen = s0.seen();
  ASSERT_GE(seen.size(), 2u);
  EXPECT_FALSE(seen[0].duplicate);
  EXPECT_TRUE(seen[1].duplicate);
  EXPECT_EQ(seen[1].seq, seen[0].seq);
  EXPECT_TRUE(cluster.Finish().ok());
}

TEST(CustomerTest, WaitNamesServerThatNeverAnswersOverNetwork) {
  VanCluster cluster(ClusterOfSize(2, 1));
  ASSERT_TRUE(cluster.Start().ok());
  EchoServer s0(cluster.server(0), /*drop=*/{0});
  EchoServer s1(cluster.server(1));
  Customer c(kApp, 0, cluster.worker(0));
  ASSERT_TRUE(c.Start().ok());
  int ts = SendTo(c, {8, 10});
  ASSERT_TRUE(s1.WaitForSeen(1));
  absl::Status s = c.Wait(ts, absl::Milliseconds(200));
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(s.message(), HasSubstr("node(s) 8 (server 0)"));
  EXPECT_TRUE(cluster.Finish().ok());
}

// A server-side customer that records requests, answers pulls at once and
// pushes only once Release is called.
class HoldingServer {
 public:
  explicit HoldingServer(Postoffice* po) : customer_(kApp, 0, po) {
    customer_.set_request_handler([this](Message&& msg, bool) {
      absl::MutexLock lock(&mu_);
      seen_.push_back(msg.meta.timestamp());
      if (msg.meta.push() && !released_) {
        held_.push_back(ReplyAddressOf(msg.meta));
        return;
      }
      customer_.SendResponse(ReplyAddressOf(msg.meta), Message()).IgnoreError();
    });
    EXPECT_TRUE(customer_.Start().ok());
  }
  void Release() {
    absl::MutexLock lock(&mu_);
    released_ = true;
    for (const ReplyAddress& to : held_) {
      customer_.SendResponse(to, Message()).IgnoreError();
    }
    held_.clear();
  }
  std::vector<int> seen() {
    absl::MutexLock lock(&mu_);
    return seen_;
  }
  bool WaitForSeen(int timestamp) {
    absl::MutexLock lock(&mu_);
    auto there = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu_) -> bool {
      return std::find(seen_.begin(), seen_.end(), timestamp) != seen_.end();
    };
    return mu_.AwaitWithTimeout(absl::Condition(&there), absl::Seconds(10));
  }

 private:
  absl::Mutex mu_;
  std::vector<int> seen_ ABSL_GUARDED_BY(mu_);
  std::vector<ReplyAddress> held_ ABSL_GUARDED_BY(mu_);
  bool released_ ABSL_GUARDED_BY(mu_) = false;
  // Last, so it is destroyed first: the van thread calls its handler until
  // then.
  Customer customer_;
};

// A pull for clock t is sent before the push of clock t - 1; moved by a
// failover, it must not reach the successor before that push is applied
// there (docs/failures.md, "Replicated servers").
TEST(CustomerTest, FailOverSendsMovedPushesFirstAndTheRestOnceAnswered) {
  VanCluster cluster(ClusterOfSize(2, 1));
  ASSERT_TRUE(cluster.Start().ok());
  EchoServer dead(cluster.server(0), /*drop=*/{0, 1});
  HoldingServer successor(cluster.server(1));
  CustomerOptions options;
  options.resend_timeout = absl::Hours(1);  // kept for moving, not resent
  Customer c(kApp, 0, cluster.worker(0), options);
  Customer::FailoverHooks hooks;
  hooks.reroute = [](Message*, int to) { return to; };
  c.set_failover_hooks(std::move(hooks));
  ASSERT_TRUE(c.Start().ok());
  auto send = [&c](int to, bool push) {
    const int ts = c.NewRequest({to});
    Message m;
    m.meta.set_recipient(to);
    m.meta.set_timestamp(ts);
    m.meta.set_push(push);
    m.meta.set_pull(!push);
    EXPECT_TRUE(c.SendRequest(std::move(m)).ok());
    return ts;
  };
  const int pull = send(8, /*push=*/false);
  const int push = send(8, /*push=*/true);
  ASSERT_TRUE(dead.WaitForSeen(2));
  c.FailOver(8, 10, absl::UnavailableError("server 0 died"));
  ASSERT_TRUE(successor.WaitForSeen(push));
  c.Tick(absl::Now() + absl::Hours(2));  // resends the push, not the pull
  // Messages to one node arrive in order: the pull would be seen before.
  const int marker = send(10, /*push=*/false);
  ASSERT_TRUE(c.Wait(marker, absl::Seconds(10)).ok());
  EXPECT_EQ(successor.seen(), (std::vector<int>{push, push, marker}));
  EXPECT_FALSE(c.IsComplete(pull));
  successor.Release();
  ASSERT_TRUE(c.Wait(push, absl::Seconds(10)).ok());
  ASSERT_TRUE(c.Wait(pull, absl::Seconds(10)).ok());
  EXPECT_EQ(successor.seen(), (std::vector<int>{push, push, marker, pull}));
  EXPECT_TRUE(cluster.Finish().ok());
}

// A message another thread was about to send to a node that failed over is
// cut by the split hook (as the map would cut it) and goes, as new messages
// numbered in each recipient's stream and without an origin, to the nodes
// that lead its keys now; the request completes once both answered.
TEST(CustomerTest, AMessageSentAfterAFailoverIsCutBySplitIntoNewMessages) {
  VanCluster cluster(ClusterOfSize(3, 1));
  ASSERT_TRUE(cluster.Start().ok());
  EchoServer s1(cluster.server(1));
  EchoServer s2(cluster.server(2));
  Customer c(kApp, 0, cluster.worker(0));
  Customer::FailoverHooks hooks;
  hooks.reroute = [](Message*, int to) { return to; };
  hooks.split = [](const Message& msg, const KeyRangeMap&) {
    std::vector<Message> pieces(2, msg);
    pieces[0].meta.set_recipient(10);
    pieces[1].meta.set_recipient(12);
    for (Message& p : pieces) p.meta.set_origin_node(8);  // as KVWorker does
    return pieces;
  };
  c.set_failover_hooks(std::move(hooks));
  ASSERT_TRUE(c.Start().ok());
  const int ts = c.NewRequest({8});
  c.FailOver(8, 10, absl::UnavailableError("server 0 died"));
  Message m;
  m.meta.set_recipient(8);
  m.meta.set_timestamp(ts);
  m.meta.set_push(true);
  ASSERT_TRUE(c.SendRequest(std::move(m)).ok());
  ASSERT_TRUE(c.Wait(ts, absl::Seconds(10)).ok());
  for (EchoServer* s : {&s1, &s2}) {
    ASSERT_TRUE(s->WaitForSeen(1));
    const std::vector<Seen> seen = s->seen();
    ASSERT_EQ(seen.size(), 1u);
    EXPECT_EQ(seen[0].timestamp, ts);
    EXPECT_EQ(seen[0].seq, 1u);  // a new message of its stream
    EXPECT_FALSE(seen[0].duplicate);
  }
  EXPECT_TRUE(cluster.Finish().ok());
}

}  // namespace
}  // namespace petrel
