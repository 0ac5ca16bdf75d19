#include "server/replacement_catch_up.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

#include "cluster/replica_map.h"

namespace petrel {
namespace {

using Sources = std::vector<std::pair<int, std::vector<int>>>;

// The servers `me` copies its ranges from, with the ranges of each: an
// added server (elastic) copies each range of its share from its first
// other replica, a replacement from the live primaries of its rank's.
Sources SourcesIn(const ReplicaMap& map, bool added, int me) {
  return added ? map.CopySourcesIn(me) : map.CopySources(me);
}
Sources SourcesOf(Postoffice* po, int me) {
  return SourcesIn(po->replica_map(), po->joined_as_added(), me);
}

// Waits until the map's copy sources for `me` differ from `sources` (a
// failover moved a range's primary), polling with a deadline.
bool WaitForNewSources(Postoffice* po, int me, const Sources& sources,
                       absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (SourcesOf(po, me) == sources) {
    if (absl::Now() >= deadline) return false;
    absl::SleepFor(absl::Milliseconds(5));  // polling, with a deadline
  }
  return true;
}

}  // namespace

absl::Status CatchUpReplacement(Postoffice* po, KVServer<float>* server,
                                const CatchUpOptions& options) {
  const int me = po->my_rank();
  const bool added = po->joined_as_added();
  const char* const who = added ? "added server " : "replacement server ";
  {
    const ReplicaMap map = po->replica_map();
    if (map.replicas() < 2 || (!added && !map.dead(me))) {
      return absl::OkStatus();
    }
  }
  const absl::Time start = absl::Now();
  const int64_t before = server->rows_copied_in();
  int ranges = 0;
  for (int round = 1;; ++round) {
    // One read of the map, so that the version names these sources.
    Sources sources;
    uint64_t version;
    {
      const ReplicaMap map = po->replica_map();
      version = map.version();
      sources = SourcesIn(map, added, me);
    }
    absl::Status failed;
    ranges = 0;
    for (const auto& [source, wanted] : sources) {
      LOG(INFO) << who << me << ": copying " << wanted.size()
                << " key range(s) from server " << source << " (round " << round
                << ")";
      absl::Status s = server->CopyRangesFrom(ServerRankToId(source), wanted,
                                              options.copy_timeout);
      if (!s.ok()) {
        // Only a source that died is worth another round.
        if (!absl::IsUnavailable(s)) {
          return absl::Status(
              s.code(), absl::StrCat(who, me, ": copy from server ", source,
                                     ": ", s.message()));
        }
        failed = absl::UnavailableError(absl::StrCat(
            who, me, ": copy from server ", source, ": ", s.message()));
        break;
      }
      ranges += static_cast<int>(wanted.size());
    }
    // A source that died after its copy no longer forwards: its successor
    // does not know this server.
    if (failed.ok() && po->map_version() != version &&
        SourcesOf(po, me) != sources) {
      failed = absl::UnavailableError(absl::StrCat(
          who, me,
          ": a source of its copy died during the catch-up (key-range map "
          "version ",
          version, " -> ", po->map_version(), ")"));
    }
    if (failed.ok()) {
      LOG(WARNING) << who << me << " caught up: " << ranges << " key ranges, "
                   << server->rows_copied_in() - before << " rows in "
                   << absl::FormatDuration(absl::Now() - start);
      // The scheduler refuses copies made against a map older than its
      // own when a source died since (after the check above).
      failed = po->SendCaughtUp(version, options.map_timeout);
      if (failed.ok()) break;
      failed = absl::Status(failed.code(),
                            absl::StrCat(who, me, ": ", failed.message()));
      // An added server's share is fixed by its admission: no next map.
      if (added || !absl::IsUnavailable(failed)) return failed;
    }
    if (!options.install_overwrites || round >= options.max_rounds) {
      return failed;
    }
    LOG(WARNING) << failed.message() << "; copying every range again from "
                 << "the primaries of the next map (round " << round + 1 << ")";
    if (!WaitForNewSources(po, me, sources, options.map_timeout)) {
      return absl::UnavailableError(absl::StrCat(
          failed.message(), "; no failover in the key-range map within ",
          absl::FormatDuration(options.map_timeout)));
    }
  }
  return absl::OkStatus();
}

absl::Status CopyForDrain(
    Postoffice* po, KVServer<float>* server,
    const std::vector<std::pair<int, std::vector<int>>>& sources,
    absl::Duration timeout) {
  const absl::Time start = absl::Now();
  const int64_t before = server->rows_copied_in();
  size_t ranges = 0;
  for (const auto& [source, wanted] : sources) {
    absl::Status s =
        server->CopyRangesFrom(ServerRankToId(source), wanted, timeout);
    if (!s.ok()) {
      return absl::Status(s.code(), absl::StrCat("server ", po->my_rank(),
                                                 ": drain copy from server ",
                                                 source, ": ", s.message()));
    }
    ranges += wanted.size();
  }
  LOG(WARNING) << "server " << po->my_rank() << " copied " << ranges
               << " key range(s) for a drain: "
               << server->rows_copied_in() - before << " rows in "
               << absl::FormatDuration(absl::Now() - start);
  return po->SendCaughtUp(po->map_version(), timeout);
}

}  // namespace petrel
