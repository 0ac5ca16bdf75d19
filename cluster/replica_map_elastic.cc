// ReplicaMap: the maps of elastic servers (docs/failures.md, "Elastic
// servers"): one more server taking its fair share of whole ranges, or one
// server drained, each moving as few copies as it can.
#include <algorithm>

#include "absl/strings/str_cat.h"

#include "cluster/replica_map.h"

namespace petrel {
namespace {

// The rank in [0, n) with the largest count whose bucket still has a
// range, ties to the lowest rank; -1 when every bucket is empty.
int Busiest(const std::vector<int64_t>& count,
            const std::vector<std::vector<size_t>>& bucket,
            const std::vector<size_t>& next, int n) {
  int best = -1;
  for (int r = 0; r < n; ++r) {
    if (next[r] >= bucket[r].size()) continue;
    if (best < 0 || count[r] > count[best]) best = r;
  }
  return best;
}

}  // namespace

int64_t ReplicaMap::CopiesHeldBy(int rank) const {
  int64_t held = 0;
  for (size_t i = 0; i < homes_.size(); ++i) held += ChainHolds(i, rank);
  return held;
}

absl::StatusOr<ReplicaMap> ReplicaMap::WithServerAdded() const {
  const int n = ranges_.num_servers();
  if (replicas_ < 2) {
    return absl::FailedPreconditionError(
        "the job's servers are not replicated (--replicas=1): a server is "
        "added by copy and handoff between replicas");
  }
  // A dead rank that a chain still holds waits for its replacement; one
  // that none holds was drained and stays a dead slot of the ring (the
  // added server takes the next rank).
  for (int r = 0; r < n; ++r) {
    if (dead_[r] && !drained(r)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "server rank ", r,
          " is dead: start a replacement for it before adding a server"));
    }
  }
  const int added = n;
  const int live = live_servers();
  const size_t num_ranges = homes_.size();
  const int64_t want_led = static_cast<int64_t>(num_ranges) / (live + 1);
  const int64_t want_held =
      static_cast<int64_t>(num_ranges) * replicas_ / (live + 1);
  std::vector<int32_t> chains = chains_;
  std::vector<bool> taken(num_ranges, false);
  std::vector<int64_t> led(n, 0), held(n, 0);
  // Candidates: by primary (to lead) and by last replica (to back).
  std::vector<std::vector<size_t>> by_primary(n), by_last(n);
  for (size_t i = 0; i < num_ranges; ++i) {
    const int32_t* c = chain(i);
    ++led[c[0]];
    for (int k = 0; k < replicas_; ++k) ++held[c[k]];
    by_primary[c[0]].push_back(i);
    by_last[c[replicas_ - 1]].push_back(i);
  }
  std::vector<size_t> next_primary(n, 0), next_last(n, 0);
  int64_t added_led = 0, added_held = 0;
  // It leads: [p, b1, ..., bR-1] -> [added, p, b1, ..., bR-2].
  while (added_led < want_led) {
    const int p = Busiest(led, by_primary, next_primary, n);
    if (p < 0) break;
    const size_t i = by_primary[p][next_primary[p]++];
    if (taken[i]) continue;
    taken[i] = true;
    int32_t* c = &chains[i * replicas_];
    --held[c[replicas_ - 1]];
    for (int k = replicas_ - 1; k > 0; --k) c[k] = c[k - 1];
    c[0] = added;
    --led[p];
    ++added_led;
    ++added_held;
  }
  // It backs: the last replica [.., bR-1] -> [.., added].
  while (added_held < want_held) {
    const int b = Busiest(held, by_last, next_last, n);
    if (b < 0) break;
    const size_t i = by_last[b][next_last[b]++];
    if (taken[i]) continue;
    taken[i] = true;
    chains[i * replicas_ + replicas_ - 1] = added;
    --held[b];
    ++added_held;
  }
  std::vector<bool> dead = dead_;
  dead.push_back(false);
  return WithChains(std::move(chains), n + 1, std::move(dead));
}

absl::StatusOr<ReplicaMap> ReplicaMap::WithServerDrained(int rank) const {
  const int n = ranges_.num_servers();
  if (rank < 0 || rank >= n || dead_[rank]) {
    return absl::InvalidArgumentError(
        absl::StrCat("server rank ", rank, " is not a live server"));
  }
  if (live_servers() - 1 < replicas_) {
    return absl::FailedPreconditionError(absl::StrCat(
        "draining server ", rank, " would leave ", live_servers() - 1,
        " live server(s) for ", replicas_, " replicas of each key range"));
  }
  std::vector<int64_t> held(n, 0);
  for (size_t i = 0; i < homes_.size(); ++i) {
    for (int k = 0; k < replicas_; ++k) ++held[chain(i)[k]];
  }
  std::vector<int32_t> chains = chains_;
  for (size_t i = 0; i < homes_.size(); ++i) {
    int32_t* c = &chains[i * replicas_];
    int32_t* at = std::find(c, c + replicas_, rank);
    if (at == c + replicas_) continue;
    bool other_live = false;
    for (int k = 0; k < replicas_; ++k) {
      other_live = other_live || (c[k] != rank && !dead_[c[k]]);
    }
    if (!other_live) {
      return absl::FailedPreconditionError(
          absl::StrCat("draining server ", rank, " would lose key range ", i,
                       "'s last live copy"));
    }
    int best = -1;
    for (int r = 0; r < n; ++r) {
      if (r == rank || dead_[r] ||
          std::find(c, c + replicas_, r) != c + replicas_) {
        continue;
      }
      if (best < 0 || held[r] < held[best]) best = r;
    }
    // live_servers() - 1 >= replicas_: one is outside the chain.
    std::copy(at + 1, c + replicas_, at);
    c[replicas_ - 1] = best;
    --held[rank];
    ++held[best];
  }
  std::vector<bool> dead = dead_;
  dead[rank] = true;
  return WithChains(std::move(chains), n, std::move(dead));
}

std::vector<std::pair<int, std::vector<int>>> ReplicaMap::CopySourcesIn(
    int rank) const {
  const int n = ranges_.num_servers();
  std::vector<std::vector<int>> of(n);
  for (size_t i = 0; i < homes_.size(); ++i) {
    if (!ChainHolds(i, rank)) continue;
    for (int k = 0; k < replicas_; ++k) {
      const int r = chain(i)[k];
      if (r == rank || dead_[r]) continue;
      of[r].push_back(static_cast<int>(i));
      break;
    }
  }
  std::vector<std::pair<int, std::vector<int>>> out;
  for (int r = 0; r < n; ++r) {
    if (!of[r].empty()) out.emplace_back(r, std::move(of[r]));
  }
  return out;
}

std::vector<std::pair<int, std::vector<int>>> ReplicaMap::NewCopiesOf(
    const ReplicaMap& before, int rank) const {
  const int n = before.ranges_.num_servers();
  std::vector<std::vector<int>> of(n);
  for (size_t i = 0; i < homes_.size() && i < before.homes_.size(); ++i) {
    if (!ChainHolds(i, rank) || before.ChainHolds(i, rank)) continue;
    of[before.ranges_.owners()[i]].push_back(static_cast<int>(i));
  }
  std::vector<std::pair<int, std::vector<int>>> out;
  for (int r = 0; r < n; ++r) {
    if (!of[r].empty()) out.emplace_back(r, std::move(of[r]));
  }
  return out;
}

std::vector<int> ReplicaMap::HandoffTargetsOf(
    int rank, const std::vector<int32_t>& previous) const {
  const int n = ranges_.num_servers();
  std::vector<bool> target(n, false);
  const std::vector<int32_t>& owners = ranges_.owners();
  for (size_t i = 0; i < owners.size() && i < previous.size(); ++i) {
    if (previous[i] != rank || owners[i] == rank) continue;
    for (int k = 0; k < replicas_; ++k) {
      const int r = chain(i)[k];
      if (r != rank && !dead_[r]) target[r] = true;
    }
  }
  std::vector<int> out;
  for (int r = 0; r < n; ++r) {
    if (target[r]) out.push_back(r);
  }
  return out;
}

}  // namespace petrel
