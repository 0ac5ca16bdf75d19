#include "cluster/local_mailbox.h"

#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace petrel {
namespace {

Message WithHead(int head) {
  Message msg;
  msg.meta.set_head(head);
  return msg;
}

TEST(LocalMailboxTest, DeliversInOrderAndAHandlerMayPostAgain) {
  absl::Mutex mu;
  std::vector<int> heads;
  LocalMailbox* self = nullptr;
  LocalMailbox mailbox([&](Message&& msg) {
    const int head = msg.meta.head();
    {
      absl::MutexLock lock(&mu);
      heads.push_back(head);
    }
    // An answer to itself, as a handler replying to its own node does.
    if (head < 100) {
      ASSERT_TRUE(self->Post(WithHead(head + 100)).ok());
    }
  });
  self = &mailbox;
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(mailbox.Post(WithHead(i)).ok());
  absl::MutexLock lock(&mu);
  auto all = [&] { return heads.size() == 20; };
  ASSERT_TRUE(mu.AwaitWithTimeout(absl::Condition(&all), absl::Seconds(30)));
  std::vector<int> firsts;
  for (int h : heads) {
    if (h < 100) firsts.push_back(h);
  }
  EXPECT_EQ(firsts, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
}

TEST(LocalMailboxTest, RefusesMessagesOnceStopped) {
  int handled = 0;
  LocalMailbox mailbox([&](Message&&) { ++handled; });
  mailbox.Stop();
  EXPECT_TRUE(absl::IsFailedPrecondition(mailbox.Post(WithHead(1))));
  mailbox.Stop();  // idempotent
  EXPECT_EQ(handled, 0);
}

}  // namespace
}  // namespace petrel
