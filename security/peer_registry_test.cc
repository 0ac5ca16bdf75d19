#include "security/peer_registry.h"

#include <map>

#include "gtest/gtest.h"

namespace petrel {
namespace {

using Reason = PeerRegistry::Reason;

bool Yes() { return true; }
bool No() { return false; }

PeerBudget SmallBudget() {
  PeerBudget b;
  b.non_member_bytes = 1000;
  b.non_member_total_bytes = 2500;
  b.max_non_member_connections = 4;
  return b;
}

// Bytes received per descriptor, as TCP would count them.
struct FakeTcp {
  std::map<int, int64_t> received;
  std::function<int64_t(int)> fn() {
    return [this](int fd) {
      auto it = received.find(fd);
      return it == received.end() ? int64_t{-1} : it->second;
    };
  }
};

std::map<int, Reason> CutsOf(const std::vector<PeerRegistry::Cut>& cuts) {
  std::map<int, Reason> out;
  for (const auto& c : cuts) out[c.fd] = c.reason;
  return out;
}

TEST(PeerRegistryTest, CutsANonMemberOverItsBudgetOnce) {
  PeerRegistry r(SmallBudget(), /*member_bytes=*/1 << 20);
  FakeTcp tcp;
  r.Accepted(5, 55);
  tcp.received[5] = kHandshakeBytes + 1000;  // at the budget: kept
  EXPECT_TRUE(r.Check(tcp.fn(), true).empty());
  tcp.received[5] = kHandshakeBytes + 1001;
  auto cuts = r.Check(tcp.fn(), true);
  ASSERT_EQ(cuts.size(), 1u);
  EXPECT_EQ(cuts[0].fd, 5);
  EXPECT_EQ(cuts[0].cookie, 55u);
  EXPECT_EQ(cuts[0].reason, Reason::kNonMemberBytes);
  EXPECT_EQ(cuts[0].in_flight, 1001);
  // Until its close is seen it is not cut again.
  EXPECT_TRUE(r.Check(tcp.fn(), true).empty());
  r.Closed(5);
  EXPECT_EQ(r.connections(), 0);
}

TEST(PeerRegistryTest, DeliveredBytesAreNotInFlight) {
  PeerRegistry r(SmallBudget(), 1 << 20);
  FakeTcp tcp;
  r.Accepted(5, 55);
  // Many small rejected messages hold no memory once delivered.
  tcp.received[5] = kHandshakeBytes + 100000;
  EXPECT_TRUE(r.Delivered(5, 99500, No));
  EXPECT_TRUE(r.Check(tcp.fn(), true).empty());
  EXPECT_FALSE(r.Delivered(6, 10, No));  // unknown descriptor
}

TEST(PeerRegistryTest, CutsTheLargestNonMembersOverTheTotal) {
  PeerRegistry r(SmallBudget(), 1 << 20);
  FakeTcp tcp;
  for (int fd = 1; fd <= 3; ++fd) r.Accepted(fd, fd);
  tcp.received[1] = kHandshakeBytes + 900;
  tcp.received[2] = kHandshakeBytes + 1000;
  tcp.received[3] = kHandshakeBytes + 800;  // 2700 > 2500
  auto cuts = CutsOf(r.Check(tcp.fn(), true));
  ASSERT_EQ(cuts.size(), 1u);
  EXPECT_EQ(cuts.count(2), 1u);
  EXPECT_EQ(cuts[2], Reason::kNonMemberTotal);
}

TEST(PeerRegistryTest, MembersHaveTheirOwnBudget) {
  PeerRegistry r(SmallBudget(), /*member_bytes=*/5000);
  FakeTcp tcp;
  r.Accepted(7, 77);
  tcp.received[7] = kHandshakeBytes + 10;
  r.Delivered(7, 10, Yes);
  EXPECT_EQ(r.non_members(), 0);
  tcp.received[7] = kHandshakeBytes + 10 + 4000;  // over 1000, under 5000
  EXPECT_TRUE(r.Check(tcp.fn(), true).empty());
  tcp.received[7] = kHandshakeBytes + 10 + 6000;
  // Members are looked at only when asked.
  EXPECT_TRUE(r.Check(tcp.fn(), false).empty());
  auto cuts = CutsOf(r.Check(tcp.fn(), true));
  ASSERT_EQ(cuts.size(), 1u);
  EXPECT_EQ(cuts[7], Reason::kMemberBytes);
}

TEST(PeerRegistryTest, AMemberHoldingMuchIsCheckedEveryRound) {
  PeerRegistry r(SmallBudget(), /*member_bytes=*/kHotBytes * 4);
  FakeTcp tcp;
  r.Accepted(8, 88);
  r.Delivered(8, 10, Yes);
  tcp.received[8] = kHandshakeBytes + 10 + kHotBytes * 2;  // hot, in budget
  EXPECT_TRUE(r.Check(tcp.fn(), true).empty());
  tcp.received[8] = kHandshakeBytes + 10 + kHotBytes * 5;
  auto cuts = CutsOf(r.Check(tcp.fn(), /*include_members=*/false));
  ASSERT_EQ(cuts.size(), 1u);
  EXPECT_EQ(cuts[8], Reason::kMemberBytes);
}

TEST(PeerRegistryTest, CutsIdleNonMembersFirstBeyondTheCount) {
  PeerRegistry r(SmallBudget(), 1 << 20);
  FakeTcp tcp;
  for (int fd = 10; fd < 17; ++fd) {
    r.Accepted(fd, fd);
    tcp.received[fd] = 0;
  }
  // The oldest delivered a message (a join, say): kept over idle ones.
  tcp.received[10] = kHandshakeBytes + 50;
  r.Delivered(10, 50, No);
  auto cuts = CutsOf(r.Check(tcp.fn(), true));
  // 7 non-members, 4 allowed: the 3 oldest idle ones go.
  ASSERT_EQ(cuts.size(), 3u);
  for (int fd : {11, 12, 13}) {
    EXPECT_EQ(cuts.count(fd), 1u) << fd;
    EXPECT_EQ(cuts[fd], Reason::kNonMemberCount);
  }
  r.LimitNonMembers(2);
  cuts = CutsOf(r.Check(tcp.fn(), true));
  EXPECT_EQ(cuts.size(), 2u);
  EXPECT_EQ(cuts.count(14), 1u);
  EXPECT_EQ(cuts.count(15), 1u);
}

TEST(PeerRegistryTest, AcceptedAgainWithTheSameCookieKeepsTheRecord) {
  PeerRegistry r(SmallBudget(), 1 << 20);
  r.Accepted(3, 33);
  r.Delivered(3, 100, Yes);
  r.Accepted(3, 33);  // the late accept event of the same connection
  EXPECT_EQ(r.non_members(), 0);
  r.Accepted(3, 34);  // another connection on the descriptor
  EXPECT_EQ(r.non_members(), 1);
  EXPECT_EQ(r.cookie(3), 34u);
}

TEST(PeerRegistryTest, AsksWhetherAMemberOnlyUntilItIsOne) {
  PeerRegistry r(SmallBudget(), 1 << 20);
  r.Accepted(4, 44);
  int asked = 0;
  auto ask = [&] {
    ++asked;
    return asked >= 2;  // the identity is bound from the 2nd message on
  };
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(r.Delivered(4, 10, ask));
  EXPECT_EQ(asked, 2);
  EXPECT_EQ(r.non_members(), 0);
}

}  // namespace
}  // namespace petrel
