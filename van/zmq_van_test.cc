#include "van/zmq_van.h"

#include <atomic>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "base/testing/wait_until.h"
#include "cluster/testing/van_cluster.h"

namespace petrel {
namespace {

using ::testing::HasSubstr;

VanOptions Local() {
  VanOptions o;
  o.bind_host = "127.0.0.1";
  o.port = 0;
  o.tick_interval = absl::Milliseconds(10);
  return o;
}

// One ZmqVan acting as node `id`, recording what it receives.
class Endpoint {
 public:
  explicit Endpoint(int id, VanOptions options = Local())
      : van_(std::make_unique<ZmqVan>(options, &metrics_)) {
    van_->set_my_id(id);
  }
  absl::Status Start() {
    return van_->Start(
        [this](Message&& msg) {
          if (on_message_) on_message_();
          absl::MutexLock lock(&mu_);
          got_.push_back(std::move(msg));
          threads_.push_back(std::this_thread::get_id());
        },
        [this] { ++ticks_; });
  }
  // Runs in the message handler, before the message is recorded. Set
  // before Start.
  void set_on_message(std::function<void()> f) { on_message_ = std::move(f); }
  pb::Node Self() const { return LoopbackNode(*van_, van_->my_id()); }
  // Routes to `peer` and accepts its messages.
  void Connect(const Endpoint& peer) { van_->Connect(peer.Self()); }

  bool WaitForMessages(size_t n, absl::Duration timeout = absl::Seconds(10)) {
    absl::MutexLock lock(&mu_);
    auto enough = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu_) -> bool {
      return got_.size() >= n;
    };
    return mu_.AwaitWithTimeout(absl::Condition(&enough), timeout);
  }
  // Waits for `n` messages in all through Van::AwaitResponse.
  bool AwaitMessages(size_t n, absl::Time deadline) {
    absl::MutexLock lock(&mu_);
    auto enough = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu_) -> bool {
      return got_.size() >= n;
    };
    return van_->AwaitResponse(&mu_, absl::Condition(&enough), deadline);
  }
  std::vector<Message> got() {
    absl::MutexLock lock(&mu_);
    return got_;
  }
  size_t num_got() {
    absl::MutexLock lock(&mu_);
    return got_.size();
  }
  // The thread each message was delivered on.
  std::vector<std::thread::id> threads() {
    absl::MutexLock lock(&mu_);
    return threads_;
  }
  int ticks() const { return ticks_.load(); }
  double Rejected(const std::string& reason) {
    return metrics_
        .Value("petrel_van_messages_rejected_total", {{"reason", reason}})
        .value_or(0);
  }
  ZmqVan& van() { return *van_; }

 private:
  MetricsRegistry metrics_;
  std::function<void()> on_message_;
  std::atomic<int> ticks_{0};
  absl::Mutex mu_;
  std::vector<Message> got_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread::id> threads_ ABSL_GUARDED_BY(mu_);
  // Last, so it is destroyed first: its I/O thread calls the handler above
  // until the van stops.
  std::unique_ptr<ZmqVan> van_;
};

// Starts both and connects each to the other.
void StartPair(Endpoint& server, Endpoint& worker) {
  ASSERT_TRUE(server.Start().ok());
  ASSERT_TRUE(worker.Start().ok());
  server.Connect(worker);
  worker.Connect(server);
}

Message To(int sender, int recipient, int head = 0) {
  Message m;
  m.meta.set_sender(sender);
  m.meta.set_recipient(recipient);
  m.meta.set_request(true);
  m.meta.set_head(head);
  return m;
}

TEST(ZmqVanTest, PortZeroBindsARealPort) {
  Endpoint a(8), b(9);
  ASSERT_TRUE(a.Start().ok());
  ASSERT_TRUE(b.Start().ok());
  EXPECT_GT(a.van().port(), 0);
  EXPECT_GT(b.van().port(), 0);
  EXPECT_NE(a.van().port(), b.van().port());
}

TEST(ZmqVanTest, ExchangesLargeFrames) {
  Endpoint server(8), worker(9);
  ASSERT_NO_FATAL_FAILURE(StartPair(server, worker));
  const size_t kKeys = 1 << 20;  // 8 MiB of keys, 16 MiB of values
  SArray<uint64_t> keys(kKeys);
  SArray<float> vals(4 * kKeys);
  for (size_t i = 0; i < kKeys; ++i) keys[i] = i * 3;
  for (size_t i = 0; i < vals.size(); ++i) vals[i] = static_cast<float>(i);
  Message m = To(9, 8);
  m.meta.set_kv(true);
  m.AddData(keys);
  m.AddData(vals);
  ASSERT_TRUE(worker.van().Send(std::move(m)).ok());
  ASSERT_TRUE(server.WaitForMessages(1));
  Message got = server.got()[0];
  EXPECT_EQ(got.meta.sender(), 9);
  ASSERT_EQ(got.data.size(), 2u);
  ASSERT_EQ(got.data[0].size(), keys.buffer().size());
  ASSERT_EQ(got.data[1].size(), vals.buffer().size());
  EXPECT_EQ(std::memcmp(got.data[0].data(), keys.data(), got.data[0].size()),
            0);
  EXPECT_EQ(std::memcmp(got.data[1].data(), vals.data(), got.data[1].size()),
            0);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(got.data[0].data()) % 8, 0u);
  // ZeroMQ sent our buffers without copying and released them afterwards.
  EXPECT_TRUE(
      WaitUntil([&] { return keys.buffer().owner().use_count() == 1; }));
  EXPECT_TRUE(
      WaitUntil([&] { return vals.buffer().owner().use_count() == 1; }));
  // And the other way.
  ASSERT_TRUE(server.van().Send(To(8, 9, 42)).ok());
  ASSERT_TRUE(worker.WaitForMessages(1));
  EXPECT_EQ(worker.got()[0].meta.head(), 42);
}

TEST(ZmqVanTest, ThreadsSendOnConnectionsOfTheirOwnAsTheSameNode) {
  Endpoint server(8), worker(9);
  ASSERT_NO_FATAL_FAILURE(StartPair(server, worker));
  constexpr int kThreads = 3;
  constexpr int kPerThread = 50;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        EXPECT_TRUE(worker.van().Send(To(9, 8, t * 1000 + i)).ok());
      }
    });
  }
  for (std::thread& t : threads) t.join();
  ASSERT_TRUE(server.WaitForMessages(kThreads * kPerThread));
  // Every message is node 9's, and each thread's arrive in its order.
  std::vector<int> next(kThreads, 0);
  for (const Message& m : server.got()) {
    EXPECT_EQ(m.meta.sender(), 9);
    const int t = m.meta.head() / 1000;
    ASSERT_LT(t, kThreads);
    EXPECT_EQ(m.meta.head() % 1000, next[t]++);
  }
  EXPECT_EQ(next, std::vector<int>(kThreads, kPerThread));
  EXPECT_EQ(server.Rejected("permission_denied"), 0);
  // Stopping closes the threads' sockets too (else it would hang), and
  // later sends from any thread fail.
  worker.van().Stop();
  std::thread late([&] {
    EXPECT_EQ(worker.van().Send(To(9, 8)).code(),
              absl::StatusCode::kFailedPrecondition);
  });
  late.join();
}

TEST(ZmqVanTest, PortInUseIsUnavailableNamingThePort) {
  Endpoint a(8);
  ASSERT_TRUE(a.Start().ok());
  VanOptions o = Local();
  o.port = a.van().port();
  Endpoint b(9, o);
  absl::Status s = b.Start();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(s.message(), HasSubstr(absl::StrCat("port ", o.port)));
}

TEST(ZmqVanTest, SendOutsideStartIsFailedPrecondition) {
  Endpoint a(8);
  EXPECT_EQ(a.van().Send(To(8, 9)).code(),
            absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(a.Start().ok());
  a.van().Stop();
  EXPECT_EQ(a.van().Send(To(8, 9)).code(),
            absl::StatusCode::kFailedPrecondition);
  a.van().Stop();  // idempotent
}

TEST(ZmqVanTest, CountsMessageToUnknownRecipient) {
  Endpoint a(8);
  ASSERT_TRUE(a.Start().ok());
  ASSERT_TRUE(a.van().Send(To(8, 99)).ok());
  EXPECT_TRUE(WaitUntil([&] { return a.Rejected("no_route") == 1; }));
}

TEST(ZmqVanTest, RejectsMessagesFromUnknownConnectionsAndSpoofedSenders) {
  Endpoint server(8), worker(9), stranger(11);
  ASSERT_TRUE(server.Start().ok());
  ASSERT_TRUE(worker.Start().ok());
  ASSERT_TRUE(stranger.Start().ok());
  server.Connect(worker);
  worker.Connect(server);
  stranger.Connect(server);  // the server does not know it
  ASSERT_TRUE(stranger.van().Send(To(11, 8)).ok());
  ASSERT_TRUE(
      WaitUntil([&] { return server.Rejected("permission_denied") == 1; }));
  // A known connection claiming another node's id.
  ASSERT_TRUE(worker.van().Send(To(11, 8)).ok());
  ASSERT_TRUE(
      WaitUntil([&] { return server.Rejected("permission_denied") == 2; }));
  // The van goes on delivering good messages, and only those.
  ASSERT_TRUE(worker.van().Send(To(9, 8, 7)).ok());
  ASSERT_TRUE(server.WaitForMessages(1));
  std::vector<Message> got = server.got();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].meta.head(), 7);
}

// Sends small messages from `from` until `to` has received one.
bool SendUntilReceived(Endpoint& from, Endpoint& to, int sender,
                       int recipient) {
  for (int i = 0; i < 100; ++i) {
    if (!from.van().Send(To(sender, recipient, 1000 + i)).ok()) return false;
    if (to.WaitForMessages(1, absl::Milliseconds(100))) return true;
  }
  return false;
}

TEST(ZmqVanTest, DropsFrameOverMaxMessageBytes) {
  VanOptions small = Local();
  small.limits.max_message_bytes = 1 << 20;
  Endpoint server(8, small), worker(9);
  ASSERT_NO_FATAL_FAILURE(StartPair(server, worker));
  Message big = To(9, 8);
  big.AddData(SArray<char>(2 << 20, 'x'));
  ASSERT_TRUE(worker.van().Send(std::move(big)).ok());
  ASSERT_TRUE(SendUntilReceived(worker, server, 9, 8));
  for (const Message& m : server.got()) {
    EXPECT_TRUE(m.data.empty());
    EXPECT_GE(m.meta.head(), 1000);
  }
}

TEST(ZmqVanTest, RejectsMessageWhoseFramesTogetherExceedTheLimit) {
  VanOptions small = Local();
  small.limits.max_message_bytes = 1 << 20;
  Endpoint server(8, small), worker(9);
  ASSERT_NO_FATAL_FAILURE(StartPair(server, worker));
  Message m = To(9, 8);
  m.AddData(SArray<char>(600 << 10, 'a'));
  m.AddData(SArray<char>(600 << 10, 'b'));
  ASSERT_TRUE(worker.van().Send(std::move(m)).ok());
  ASSERT_TRUE(
      WaitUntil([&] { return server.Rejected("resource_exhausted") == 1; }));
  ASSERT_TRUE(worker.van().Send(To(9, 8, 5)).ok());
  ASSERT_TRUE(server.WaitForMessages(1));
  EXPECT_EQ(server.got().size(), 1u);
  EXPECT_EQ(server.got()[0].meta.head(), 5);
}

TEST(ZmqVanTest, AcceptsLimitsAboveTwoGiB) {
  VanOptions big = Local();
  big.limits.max_message_bytes = int64_t{5} << 30;
  Endpoint server(8, big), worker(9, big);
  ASSERT_NO_FATAL_FAILURE(StartPair(server, worker));
  Message m = To(9, 8);
  m.AddData(SArray<char>(3 << 20, 'z'));
  ASSERT_TRUE(worker.van().Send(std::move(m)).ok());
  ASSERT_TRUE(server.WaitForMessages(1));
  EXPECT_EQ(server.got()[0].data[0].size(), size_t{3} << 20);
}

// A connected pair: the worker (9) waits for what the server (8) sends.
class ZmqVanReceiveUntilTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(StartPair(server_, worker_));
  }
  // Borrows the worker's receiving until it got `n` messages in all; the
  // first call of `done` (made once the borrow began) sends one from the
  // server, so that message must arrive on this thread.
  bool ReceiveOneSentWhileWaiting(size_t n) {
    bool sent = false;
    return worker_.van().ReceiveUntil(
        [&] {
          if (!sent) {
            sent = true;
            EXPECT_TRUE(server_.van().Send(To(8, 9, static_cast<int>(n))).ok());
          }
          return worker_.num_got() >= n;
        },
        absl::Now() + absl::Seconds(10));
  }

  Endpoint server_{8};
  Endpoint worker_{9};
};

TEST_F(ZmqVanReceiveUntilTest, DeliversOnTheWaitingThreadThenOnTheVanThread) {
  EXPECT_TRUE(ReceiveOneSentWhileWaiting(1));
  ASSERT_EQ(worker_.num_got(), 1u);
  EXPECT_EQ(worker_.threads()[0], std::this_thread::get_id());
  EXPECT_EQ(worker_.got()[0].meta.head(), 1);
  // Given back: the van's own thread receives the next one.
  ASSERT_TRUE(server_.van().Send(To(8, 9, 2)).ok());
  ASSERT_TRUE(worker_.WaitForMessages(2));
  EXPECT_NE(worker_.threads()[1], std::this_thread::get_id());
  // And lends it again.
  EXPECT_TRUE(ReceiveOneSentWhileWaiting(3));
  EXPECT_EQ(worker_.threads()[2], std::this_thread::get_id());
}

TEST_F(ZmqVanReceiveUntilTest, OneThreadAtATimeAndNeverAHandler) {
  // Handlers (on the van thread or on a waiting thread) may not borrow.
  std::vector<bool> from_handler;
  worker_.van().Stop();
  Endpoint worker(10);
  worker.set_on_message([&] {
    from_handler.push_back(
        worker.van().ReceiveUntil([] { return true; }, absl::InfiniteFuture()));
  });
  ASSERT_TRUE(worker.Start().ok());
  server_.Connect(worker);
  worker.Connect(server_);
  ASSERT_TRUE(server_.van().Send(To(8, 10)).ok());
  ASSERT_TRUE(worker.WaitForMessages(1));
  bool sent = false;
  EXPECT_TRUE(worker.van().ReceiveUntil(
      [&] {
        if (!sent) {
          sent = true;
          EXPECT_TRUE(server_.van().Send(To(8, 10)).ok());
          // Another thread while this one receives.
          bool other = true;
          std::thread t([&] {
            other = worker.van().ReceiveUntil([] { return true; },
                                              absl::InfiniteFuture());
          });
          t.join();
          EXPECT_FALSE(other);
        }
        return worker.num_got() >= 2;
      },
      absl::Now() + absl::Seconds(10)));
  EXPECT_EQ(from_handler, std::vector<bool>({false, false}));
}

TEST_F(ZmqVanReceiveUntilTest, LendsOnlyWhileAtMostOneRequestIsPending) {
  Endpoint worker(10);
  worker.van().set_serves_requests(false);
  EXPECT_EQ(worker.van().pending_requests(), 0);
  worker.van().RequestOpened();
  worker.van().RequestOpened();
  EXPECT_EQ(worker.van().pending_requests(), 2);
  ASSERT_TRUE(worker.Start().ok());
  EXPECT_FALSE(
      worker.van().ReceiveUntil([] { return false; }, absl::InfiniteFuture()));
  worker.van().RequestClosed();  // the caller's own is left
  EXPECT_TRUE(
      worker.van().ReceiveUntil([] { return true; }, absl::InfiniteFuture()));
  worker.van().set_serves_requests(true);
  EXPECT_EQ(worker.van().pending_requests(), -1);
}

TEST_F(ZmqVanReceiveUntilTest, AwaitResponseReturnsOnceDoneOrAtTheDeadline) {
  ASSERT_TRUE(server_.van().Send(To(8, 9)).ok());
  EXPECT_TRUE(worker_.AwaitMessages(1, absl::Now() + absl::Seconds(10)));
  EXPECT_EQ(worker_.num_got(), 1u);
  const absl::Time deadline = absl::Now() + absl::Milliseconds(30);
  EXPECT_FALSE(worker_.AwaitMessages(2, deadline));
  EXPECT_GE(absl::Now(), deadline);
}

TEST_F(ZmqVanReceiveUntilTest, AwaitResponseWaitsForTheVanThreadWhenNotLent) {
  worker_.van().set_serves_requests(false);
  worker_.van().RequestOpened();
  worker_.van().RequestOpened();
  ASSERT_TRUE(server_.van().Send(To(8, 9, 4)).ok());
  EXPECT_TRUE(worker_.AwaitMessages(1, absl::Now() + absl::Seconds(10)));
  ASSERT_EQ(worker_.num_got(), 1u);
  EXPECT_NE(worker_.threads()[0], std::this_thread::get_id());
}

TEST_F(ZmqVanReceiveUntilTest, ReturnsAtTheDeadline) {
  const absl::Time deadline = absl::Now() + absl::Milliseconds(30);
  EXPECT_TRUE(worker_.van().ReceiveUntil([] { return false; }, deadline));
  EXPECT_GE(absl::Now(), deadline);
}

TEST_F(ZmqVanReceiveUntilTest, TicksGoOnWhileAThreadReceives) {
  const int before = worker_.ticks();
  EXPECT_TRUE(
      worker_.van().ReceiveUntil([&] { return worker_.ticks() >= before + 3; },
                                 absl::Now() + absl::Seconds(10)));
  EXPECT_GE(worker_.ticks(), before + 3);
}

// A condition another thread makes true (a signal failing the request)
// ends the wait without a message arriving.
TEST_F(ZmqVanReceiveUntilTest, SeesAConditionAnotherThreadSet) {
  std::atomic<bool> failed{false};
  absl::Notification receiving;
  absl::Time returned;
  std::thread t([&] {
    EXPECT_TRUE(worker_.van().ReceiveUntil(
        [&] {
          if (!receiving.HasBeenNotified()) receiving.Notify();
          return failed.load();
        },
        absl::Now() + absl::Seconds(20)));
    returned = absl::Now();
  });
  receiving.WaitForNotification();
  const absl::Time set = absl::Now();
  failed = true;
  t.join();
  // Within a receive slice (100 ms), not at the deadline.
  EXPECT_LT(returned - set, absl::Seconds(10));
}

TEST_F(ZmqVanReceiveUntilTest, StopEndsAReceivingThread) {
  absl::Notification receiving;
  std::thread t([&] {
    EXPECT_TRUE(worker_.van().ReceiveUntil(
        [&] {
          if (!receiving.HasBeenNotified()) receiving.Notify();
          return false;
        },
        absl::InfiniteFuture()));
  });
  receiving.WaitForNotification();
  worker_.van().Stop();  // returns only once the thread gave the ROUTER back
  t.join();
  EXPECT_FALSE(
      worker_.van().ReceiveUntil([] { return true; }, absl::InfiniteFuture()));
}

}  // namespace
}  // namespace petrel
