#include "cluster/replica_map.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace petrel {
namespace {

std::vector<int32_t> RingChains(const std::vector<int32_t>& homes, int replicas,
                                int n) {
  std::vector<int32_t> chains;
  chains.reserve(homes.size() * replicas);
  for (int32_t h : homes) {
    for (int k = 0; k < replicas; ++k) chains.push_back((h + k) % n);
  }
  return chains;
}

}  // namespace

ReplicaMap::ReplicaMap(KeyRangeMap ranges, std::vector<int32_t> homes,
                       int replicas, uint64_t version, std::vector<bool> dead)
    : ranges_(std::move(ranges)),
      homes_(std::move(homes)),
      chains_(RingChains(homes_, replicas, ranges_.num_servers())),
      replicas_(replicas),
      version_(version),
      dead_(std::move(dead)) {}

ReplicaMap::ReplicaMap(KeyRangeMap ranges, std::vector<int32_t> chains,
                       int replicas, uint64_t version, std::vector<bool> dead,
                       bool explicit_chains)
    : ranges_(std::move(ranges)),
      chains_(std::move(chains)),
      explicit_(explicit_chains),
      replicas_(replicas),
      version_(version),
      dead_(std::move(dead)) {
  homes_.reserve(chains_.size() / replicas_);
  for (size_t i = 0; i < chains_.size(); i += replicas_) {
    homes_.push_back(chains_[i]);
  }
}

absl::StatusOr<ReplicaMap> ReplicaMap::Initial(KeyRangeMap ranges,
                                               int replicas) {
  const int n = ranges.num_servers();
  if (replicas < 1 || replicas > n) {
    return absl::InvalidArgumentError(absl::StrCat(
        "replicas must be in 1..", n, " (the servers), not ", replicas));
  }
  std::vector<int32_t> homes = ranges.owners();
  return ReplicaMap(std::move(ranges), std::move(homes), replicas,
                    /*version=*/1, std::vector<bool>(n, false));
}

absl::StatusOr<ReplicaMap> ReplicaMap::WithChains(
    std::vector<int32_t> chains, int num_servers,
    std::vector<bool> dead) const {
  std::vector<int32_t> owners(ranges_.begins().size(), -1);
  for (size_t i = 0; i < owners.size(); ++i) {
    for (int k = 0; k < replicas_ && owners[i] < 0; ++k) {
      const int32_t r = chains[i * replicas_ + k];
      if (!dead[r]) owners[i] = r;
    }
    if (owners[i] < 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("key range ", i, " has no live replica left"));
    }
  }
  absl::StatusOr<KeyRangeMap> ranges =
      KeyRangeMap::FromRanges(ranges_.begins(), std::move(owners), num_servers);
  if (!ranges.ok()) return ranges.status();
  return ReplicaMap(*std::move(ranges), std::move(chains), replicas_,
                    version_ + 1, std::move(dead), /*explicit_chains=*/true);
}

bool ReplicaMap::dead(int rank) const {
  return rank >= 0 && rank < static_cast<int>(dead_.size()) && dead_[rank];
}

int ReplicaMap::live_servers() const {
  return static_cast<int>(std::count(dead_.begin(), dead_.end(), false));
}

int64_t ReplicaMap::under_replicated_ranges() const {
  int64_t under = 0;
  for (size_t i = 0; i < homes_.size(); ++i) {
    int live = 0;
    for (int k = 0; k < replicas_; ++k) live += dead_[chain(i)[k]] ? 0 : 1;
    if (live < replicas_) ++under;
  }
  return under;
}

KeyRangeMap ReplicaMap::HeldBy(int rank) const {
  if (replicas_ < 2 || dead(rank)) return ranges_;
  const int n = ranges_.num_servers();
  std::vector<int32_t> owners = ranges_.owners();
  for (size_t i = 0; i < owners.size(); ++i) {
    if (ChainHolds(i, rank)) owners[i] = rank;
  }
  // The same begins and servers as a valid map: cannot fail.
  return KeyRangeMap::FromRanges(ranges_.begins(), std::move(owners), n)
      .value();
}

absl::StatusOr<ReplicaMap> ReplicaMap::WithoutServer(int dead) const {
  const int n = ranges_.num_servers();
  if (dead < 0 || dead >= n || dead_[dead]) {
    return absl::InvalidArgumentError(
        absl::StrCat("server rank ", dead, " is not a live server"));
  }
  std::vector<bool> now_dead = dead_;
  now_dead[dead] = true;
  std::vector<int32_t> owners = ranges_.owners();
  for (size_t i = 0; i < owners.size(); ++i) {
    if (owners[i] != dead) continue;
    int next = -1;
    for (int k = 0; k < replicas_ && next < 0; ++k) {
      const int r = chain(i)[k];
      if (!now_dead[r]) next = r;
    }
    if (next < 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "key range ", i, " lost all of its ", replicas_,
          " replica(s) (server ranks ", absl::StrJoin(ChainOf(i), ","), ")"));
    }
    owners[i] = next;
  }
  absl::StatusOr<KeyRangeMap> ranges =
      KeyRangeMap::FromRanges(ranges_.begins(), std::move(owners), n);
  if (!ranges.ok()) return ranges.status();
  return ReplicaMap(*std::move(ranges), chains_, replicas_, version_ + 1,
                    std::move(now_dead), explicit_);
}

absl::StatusOr<ReplicaMap> ReplicaMap::WithServerBack(int rank) const {
  if (!dead(rank)) {
    return absl::InvalidArgumentError(
        absl::StrCat("server rank ", rank, " is not a dead server"));
  }
  std::vector<bool> now_dead = dead_;
  now_dead[rank] = false;
  return ReplicaMap(ranges_, chains_, replicas_, version_ + 1,
                    std::move(now_dead), explicit_);
}

bool ReplicaMap::ChainHolds(size_t i, int rank) const {
  if (i >= homes_.size()) return false;
  const int32_t* c = chain(i);
  return std::find(c, c + replicas_, rank) != c + replicas_;
}

std::vector<int> ReplicaMap::ChainOf(size_t i) const {
  if (i >= homes_.size()) return {};
  return std::vector<int>(chain(i), chain(i) + replicas_);
}

std::vector<std::pair<int, std::vector<int>>> ReplicaMap::CopySources(
    int newcomer) const {
  const int n = ranges_.num_servers();
  std::vector<std::vector<int>> of(n);
  const std::vector<int32_t>& owners = ranges_.owners();
  for (size_t i = 0; i < owners.size(); ++i) {
    if (owners[i] == newcomer || dead_[owners[i]]) continue;
    if (ChainHolds(i, newcomer)) of[owners[i]].push_back(static_cast<int>(i));
  }
  std::vector<std::pair<int, std::vector<int>>> out;
  for (int r = 0; r < n; ++r) {
    if (!of[r].empty()) out.emplace_back(r, std::move(of[r]));
  }
  return out;
}

int ReplicaMap::SuccessorOf(int dead) const {
  const int n = ranges_.num_servers();
  if (!this->dead(dead)) return -1;
  for (int k = 1; k < n; ++k) {
    const int r = (dead + k) % n;
    if (!dead_[r]) return r;
  }
  return -1;
}

std::vector<int> ReplicaMap::BackupsOf(int primary) const {
  const int n = ranges_.num_servers();
  std::vector<bool> backup(n, false);
  const std::vector<int32_t>& owners = ranges_.owners();
  for (size_t i = 0; i < owners.size(); ++i) {
    if (owners[i] != primary) continue;
    for (int k = 0; k < replicas_; ++k) {
      const int r = chain(i)[k];
      if (r != primary && !dead_[r]) backup[r] = true;
    }
  }
  std::vector<int> out;
  for (int r = 0; r < n; ++r) {
    if (backup[r]) out.push_back(r);
  }
  return out;
}

void ReplicaMap::ToControl(pb::Control* control) const {
  control->clear_ranges();
  control->clear_range_owners();
  control->clear_range_homes();
  control->clear_range_replicas();
  for (uint64_t b : ranges_.begins()) control->add_ranges(b);
  for (int32_t o : ranges_.owners()) control->add_range_owners(o);
  if (replicas_ > 1) {
    for (int32_t h : homes_) control->add_range_homes(h);
    control->set_replicas(replicas_);
    control->set_map_version(version_);
    control->clear_live_servers();
    for (int r = 0; r < ranges_.num_servers(); ++r) {
      if (!dead_[r]) control->add_live_servers(r);
    }
    if (explicit_) {
      for (int32_t r : chains_) control->add_range_replicas(r);
      control->set_num_servers(ranges_.num_servers());
    }
  }
}

namespace {

// The replica chains `control` carries (range_replicas), or the ring
// chains of its homes (range_homes; the owners when none).
absl::StatusOr<std::vector<int32_t>> ChainsOf(const pb::Control& control,
                                              const KeyRangeMap& ranges,
                                              int replicas, int num_servers) {
  const size_t num_ranges = ranges.owners().size();
  if (control.range_replicas_size() > 0) {
    if (static_cast<size_t>(control.range_replicas_size()) !=
        num_ranges * replicas) {
      return absl::InvalidArgumentError(
          absl::StrCat(control.range_replicas_size(), " range replicas for ",
                       num_ranges, " ranges of ", replicas, " replicas"));
    }
    return std::vector<int32_t>(control.range_replicas().begin(),
                                control.range_replicas().end());
  }
  std::vector<int32_t> homes;
  if (control.range_homes_size() == 0) {
    homes = ranges.owners();
  } else if (static_cast<size_t>(control.range_homes_size()) != num_ranges) {
    return absl::InvalidArgumentError(absl::StrCat(control.range_homes_size(),
                                                   " range homes for ",
                                                   num_ranges, " ranges"));
  } else {
    homes.assign(control.range_homes().begin(), control.range_homes().end());
  }
  for (size_t i = 0; i < homes.size(); ++i) {
    if (homes[i] < 0 || homes[i] >= num_servers) {
      return absl::InvalidArgumentError(
          absl::StrCat("range ", i, " has home rank ", homes[i]));
    }
  }
  return RingChains(homes, replicas, num_servers);
}

// Every replica a server, once per chain; the primary among them.
absl::Status CheckChains(const std::vector<int32_t>& chains,
                         const std::vector<int32_t>& owners, int replicas,
                         int num_servers) {
  for (size_t i = 0; i < owners.size(); ++i) {
    const int32_t* c = &chains[i * replicas];
    for (int k = 0; k < replicas; ++k) {
      if (c[k] < 0 || c[k] >= num_servers ||
          std::find(c, c + k, c[k]) != c + k) {
        return absl::InvalidArgumentError(absl::StrCat(
            "range ", i, ": replica rank ", c[k], " is not a server of ",
            num_servers, " or is listed twice"));
      }
    }
    const int owner = owners[i];
    if (std::find(c, c + replicas, owner) == c + replicas) {
      return absl::InvalidArgumentError(absl::StrCat(
          "range ", i, ": primary rank ", owner, " is not among its ", replicas,
          " replica(s) from rank ", c[0]));
    }
  }
  return absl::OkStatus();
}

// The dead ranks: all but those `control` lists as live, or, when it lists
// none, the ranks skipped before each range's primary in its chain.
absl::StatusOr<std::vector<bool>> DeadRanksOf(
    const pb::Control& control, const std::vector<int32_t>& owners,
    const std::vector<int32_t>& chains, int replicas, int num_servers) {
  std::vector<bool> dead(num_servers, true);
  if (control.live_servers_size() > 0) {
    // Listed (a replacement may be live as a backup ahead of a primary).
    for (int32_t r : control.live_servers()) {
      if (r < 0 || r >= num_servers) {
        return absl::InvalidArgumentError(
            absl::StrCat("live server rank ", r, " of ", num_servers));
      }
      dead[r] = false;
    }
    for (size_t i = 0; i < owners.size(); ++i) {
      if (dead[owners[i]]) {
        return absl::InvalidArgumentError(
            absl::StrCat("range ", i, ": primary rank ", owners[i],
                         " is not a live server"));
      }
    }
    return dead;
  }
  // A server is live unless it lost a range it was home of or led to a
  // later one in its chain: the ranks skipped before each primary.
  for (int r = 0; r < num_servers; ++r) dead[r] = false;
  for (size_t i = 0; i < owners.size(); ++i) {
    const int32_t* c = &chains[i * replicas];
    for (int k = 0; c[k] != owners[i]; ++k) dead[c[k]] = true;
  }
  return dead;
}

}  // namespace

absl::StatusOr<ReplicaMap> ReplicaMap::FromControl(const pb::Control& control,
                                                   int num_servers) {
  if (control.num_servers() > 0) num_servers = control.num_servers();
  absl::StatusOr<KeyRangeMap> ranges = KeyRangeMap::FromRanges(
      {control.ranges().begin(), control.ranges().end()},
      {control.range_owners().begin(), control.range_owners().end()},
      num_servers);
  if (!ranges.ok()) return ranges.status();
  const int replicas = std::max(1, control.replicas());
  if (replicas > num_servers) {
    return absl::InvalidArgumentError(absl::StrCat(
        "replicas ", replicas, " exceeds the ", num_servers, " servers"));
  }
  absl::StatusOr<std::vector<int32_t>> chains =
      ChainsOf(control, *ranges, replicas, num_servers);
  if (!chains.ok()) return chains.status();
  absl::Status valid =
      CheckChains(*chains, ranges->owners(), replicas, num_servers);
  if (!valid.ok()) return valid;
  absl::StatusOr<std::vector<bool>> dead =
      DeadRanksOf(control, ranges->owners(), *chains, replicas, num_servers);
  if (!dead.ok()) return dead.status();
  return ReplicaMap(*std::move(ranges), *std::move(chains), replicas,
                    control.map_version(), *std::move(dead),
                    /*explicit_chains=*/control.range_replicas_size() > 0);
}

}  // namespace petrel
