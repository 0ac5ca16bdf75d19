#include "security/peer_registry.h"

#include <algorithm>

namespace petrel {

const char* PeerRegistry::ReasonName(Reason reason) {
  switch (reason) {
    case Reason::kNonMemberBytes:
      return "non_member_bytes";
    case Reason::kNonMemberTotal:
      return "non_member_total_bytes";
    case Reason::kNonMemberCount:
      return "non_member_connections";
    case Reason::kMemberBytes:
      return "member_bytes";
  }
  return "unknown";
}

std::vector<PeerRegistry::Reason> PeerRegistry::AllReasons() {
  return {Reason::kNonMemberBytes, Reason::kNonMemberTotal,
          Reason::kNonMemberCount, Reason::kMemberBytes};
}

PeerRegistry::PeerRegistry(const PeerBudget& budget, int64_t member_bytes)
    : budget_(budget),
      member_bytes_(member_bytes),
      max_non_members_(budget.max_non_member_connections) {}

void PeerRegistry::Accepted(int fd, uint64_t cookie) {
  absl::MutexLock lock(&mu_);
  Conn& c = conns_[fd];
  if (cookie != 0 && c.cookie == cookie) return;  // already recorded
  c = Conn();
  c.cookie = cookie;
  c.order = next_order_++;
}

void PeerRegistry::Closed(int fd) {
  absl::MutexLock lock(&mu_);
  conns_.erase(fd);
}

bool PeerRegistry::Delivered(int fd, int64_t wire_bytes,
                             absl::FunctionRef<bool()> is_member) {
  absl::MutexLock lock(&mu_);
  auto it = conns_.find(fd);
  if (it == conns_.end()) return false;
  it->second.delivered += wire_bytes;
  it->second.any_delivered = true;
  if (!it->second.member && is_member()) it->second.member = true;
  return true;
}

std::vector<PeerRegistry::Cut> PeerRegistry::Check(
    const std::function<int64_t(int fd)>& received, bool include_members) {
  absl::MutexLock lock(&mu_);
  struct Candidate {
    int fd;
    const Conn* conn;
    int64_t in_flight;
  };
  std::vector<Cut> cuts;
  std::vector<Candidate> non_members;
  int64_t total = 0;
  for (auto& [fd, conn] : conns_) {
    if (conn.cut || (conn.member && !include_members && !conn.hot)) continue;
    const int64_t r = received(fd);
    int64_t in_flight = 0;
    if (r >= 0) {
      in_flight = std::max<int64_t>(0, r - conn.delivered - kHandshakeBytes);
    }
    if (conn.member) {
      conn.hot = in_flight > kHotBytes;
      if (r >= 0 && in_flight > member_bytes_) {
        cuts.push_back({fd, conn.cookie, Reason::kMemberBytes, in_flight});
      }
      continue;
    }
    if (r >= 0 && in_flight > budget_.non_member_bytes) {
      cuts.push_back({fd, conn.cookie, Reason::kNonMemberBytes, in_flight});
      continue;
    }
    non_members.push_back({fd, &conn, in_flight});
    total += in_flight;
  }
  if (total > budget_.non_member_total_bytes) {
    // The largest first, until the rest fit.
    std::sort(non_members.begin(), non_members.end(),
              [](const Candidate& a, const Candidate& b) {
                return a.in_flight > b.in_flight;
              });
    size_t n = 0;
    while (n < non_members.size() && total > budget_.non_member_total_bytes) {
      const Candidate& c = non_members[n++];
      cuts.push_back(
          {c.fd, c.conn->cookie, Reason::kNonMemberTotal, c.in_flight});
      total -= c.in_flight;
    }
    non_members.erase(non_members.begin(), non_members.begin() + n);
  }
  const size_t max = static_cast<size_t>(std::max(0, max_non_members_));
  if (non_members.size() > max) {
    // Those that never delivered a message first, then the oldest.
    std::sort(non_members.begin(), non_members.end(),
              [](const Candidate& a, const Candidate& b) {
                if (a.conn->any_delivered != b.conn->any_delivered) {
                  return !a.conn->any_delivered;
                }
                return a.conn->order < b.conn->order;
              });
    for (size_t i = 0; i < non_members.size() - max; ++i) {
      const Candidate& c = non_members[i];
      cuts.push_back(
          {c.fd, c.conn->cookie, Reason::kNonMemberCount, c.in_flight});
    }
  }
  for (const Cut& c : cuts) conns_[c.fd].cut = true;
  return cuts;
}

int PeerRegistry::connections() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(conns_.size());
}

int PeerRegistry::non_members() const {
  absl::MutexLock lock(&mu_);
  int n = 0;
  for (const auto& [fd, conn] : conns_) n += conn.member || conn.cut ? 0 : 1;
  return n;
}

uint64_t PeerRegistry::cookie(int fd) const {
  absl::MutexLock lock(&mu_);
  auto it = conns_.find(fd);
  return it == conns_.end() ? 0 : it->second.cookie;
}

void PeerRegistry::LimitNonMembers(int max) {
  absl::MutexLock lock(&mu_);
  max_non_members_ = std::min(max_non_members_, max);
}

}  // namespace petrel
