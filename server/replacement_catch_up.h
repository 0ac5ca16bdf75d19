// A replacement server's catch-up (docs/failures.md, "Replacement
// servers"): it copies its rank's key ranges from their live primaries,
// then tells the scheduler it holds them (CAUGHT_UP).
#ifndef PETREL_SERVER_REPLACEMENT_CATCH_UP_H_
#define PETREL_SERVER_REPLACEMENT_CATCH_UP_H_

#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"

#include "cluster/postoffice.h"
#include "kv/kv_server.h"

namespace petrel {

struct CatchUpOptions {
  // Whether installing a copy overwrites rows (training tables), so that a
  // range copied again ends exactly as the new copy says. A KV store in
  // sum mode installs a row by adding the copy less what it holds, which
  // can round for floating-point values when it holds the row already, so
  // its ranges are not copied twice. Default false.
  bool install_overwrites = false;
  // Rounds of copies at most (each after a source died). Default 4.
  int max_rounds = 4;
  // How long to wait for the scheduler's new map after a source died, and
  // for one source's copy. Default 60 s and 10 min.
  absl::Duration map_timeout = absl::Seconds(60);
  absl::Duration copy_timeout = absl::Minutes(10);
};

// Nothing to do (OK) unless this server is a replacement (its rank is dead
// in the replicated map it joined with). Otherwise copies the ranges of its
// rank from their live primaries and sends CAUGHT_UP. When a source dies
// during the catch-up (its copy fails, or the map's sources changed by the
// end), a server whose install overwrites waits for the map after the
// failover and copies every range again from the new primaries (a source
// that died after its copy would not forward its successor's pushes);
// otherwise, or after max_rounds, Unavailable naming the source and why.
absl::Status CatchUpReplacement(Postoffice* po, KVServer<float>* server,
                                const CatchUpOptions& options);

// Draining another server (docs/failures.md, "Elastic servers"): copies
// the ranges the scheduler's DRAIN_COPY lists, each from its source rank
// (which forwards every later push here), then sends CAUGHT_UP and waits
// for the scheduler's answer (up to `timeout`). The
// KV store's install sets the rows, so rows of a range held already (from
// whole forwarded pushes) do not count twice. An error names the source;
// the scheduler then abandons the drain after its timeout.
absl::Status CopyForDrain(
    Postoffice* po, KVServer<float>* server,
    const std::vector<std::pair<int, std::vector<int>>>& sources,
    absl::Duration timeout);

}  // namespace petrel

#endif  // PETREL_SERVER_REPLACEMENT_CATCH_UP_H_
