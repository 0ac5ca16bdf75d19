#include "van/replica_map.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace petrel {

ReplicaMap::ReplicaMap(KeyRangeMap ranges, std::vector<int32_t> homes,
                       int replicas, uint64_t version, std::vector<bool> dead)
    : ranges_(std::move(ranges)),
      homes_(std::move(homes)),
      replicas_(replicas),
      version_(version),
      dead_(std::move(dead)) {}

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

bool ReplicaMap::dead(int rank) const {
  return rank >= 0 && rank < static_cast<int>(dead_.size()) && dead_[rank];
}

int ReplicaMap::live_servers() const {
  return static_cast<int>(std::count(dead_.begin(), dead_.end(), false));
}

int64_t ReplicaMap::under_replicated_ranges() const {
  const int n = ranges_.num_servers();
  int64_t under = 0;
  for (int32_t home : homes_) {
    int live = 0;
    for (int k = 0; k < replicas_; ++k) live += dead_[(home + k) % n] ? 0 : 1;
    if (live < replicas_) ++under;
  }
  return under;
}

KeyRangeMap ReplicaMap::HeldBy(int rank) const {
  if (replicas_ < 2 || dead(rank)) return ranges_;
  const int n = ranges_.num_servers();
  std::vector<int32_t> owners = ranges_.owners();
  for (size_t i = 0; i < owners.size(); ++i) {
    if ((rank - homes_[i] + n) % n < replicas_) owners[i] = rank;
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
      const int r = (homes_[i] + k) % n;
      if (!now_dead[r]) next = r;
    }
    if (next < 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("key range ", i, " lost all of its ", replicas_,
                       " replica(s) (server ranks ", homes_[i], "..",
                       (homes_[i] + replicas_ - 1) % n, " mod ", n, ")"));
    }
    owners[i] = next;
  }
  absl::StatusOr<KeyRangeMap> ranges =
      KeyRangeMap::FromRanges(ranges_.begins(), std::move(owners), n);
  if (!ranges.ok()) return ranges.status();
  return ReplicaMap(*std::move(ranges), homes_, replicas_, version_ + 1,
                    std::move(now_dead));
}

absl::StatusOr<ReplicaMap> ReplicaMap::WithServerBack(int rank) const {
  if (!dead(rank)) {
    return absl::InvalidArgumentError(
        absl::StrCat("server rank ", rank, " is not a dead server"));
  }
  std::vector<bool> now_dead = dead_;
  now_dead[rank] = false;
  return ReplicaMap(ranges_, homes_, replicas_, version_ + 1,
                    std::move(now_dead));
}

bool ReplicaMap::ChainHolds(size_t i, int rank) const {
  const int n = ranges_.num_servers();
  return i < homes_.size() && (rank - homes_[i] + n) % n < replicas_;
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
      const int r = (homes_[i] + k) % n;
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
  }
}

absl::StatusOr<ReplicaMap> ReplicaMap::FromControl(const pb::Control& control,
                                                   int num_servers) {
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
  std::vector<int32_t> homes;
  if (control.range_homes_size() == 0) {
    homes = ranges->owners();
  } else {
    if (control.range_homes_size() != control.range_owners_size()) {
      return absl::InvalidArgumentError(
          absl::StrCat(control.range_homes_size(), " range homes for ",
                       control.range_owners_size(), " ranges"));
    }
    homes.assign(control.range_homes().begin(), control.range_homes().end());
  }
  std::vector<bool> dead(num_servers, true);
  for (size_t i = 0; i < homes.size(); ++i) {
    if (homes[i] < 0 || homes[i] >= num_servers) {
      return absl::InvalidArgumentError(
          absl::StrCat("range ", i, " has home rank ", homes[i]));
    }
    // A primary must be in its range's chain.
    const int owner = ranges->owners()[i];
    const int k = (owner - homes[i] + num_servers) % num_servers;
    if (k >= replicas) {
      return absl::InvalidArgumentError(absl::StrCat(
          "range ", i, ": primary rank ", owner, " is not among its ", replicas,
          " replica(s) from rank ", homes[i]));
    }
  }
  if (control.live_servers_size() > 0) {
    // Listed (a replacement may be live as a backup ahead of a primary).
    for (int32_t r : control.live_servers()) {
      if (r < 0 || r >= num_servers) {
        return absl::InvalidArgumentError(
            absl::StrCat("live server rank ", r, " of ", num_servers));
      }
      dead[r] = false;
    }
    for (size_t i = 0; i < homes.size(); ++i) {
      if (dead[ranges->owners()[i]]) {
        return absl::InvalidArgumentError(
            absl::StrCat("range ", i, ": primary rank ", ranges->owners()[i],
                         " is not a live server"));
      }
    }
  } else {
    // A server is live unless it lost a range it was home of or led to a
    // later one in its chain: the ranks skipped before each primary.
    for (int r = 0; r < num_servers; ++r) dead[r] = false;
    for (size_t i = 0; i < homes.size(); ++i) {
      for (int r = homes[i]; r != ranges->owners()[i];
           r = (r + 1) % num_servers) {
        dead[r] = true;
      }
    }
  }
  return ReplicaMap(*std::move(ranges), std::move(homes), replicas,
                    control.map_version(), std::move(dead));
}

}  // namespace petrel
