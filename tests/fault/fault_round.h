// One round of the randomized fault soak (docs/failures.md, "Soak"): a
// fresh job of the real daemons, one fault picked at random that hits it
// in full flow, and the check of what must hold after it. Run in a loop by
// tests/fault/fault_soak.cc (tools/fault/fault-soak.sh, minutes) and by
// tests/fault/fault_soak_test.cc (the short version in CI).
//
// The check job (3 servers keeping 2 copies of each range, two
// petrel-worker check jobs, a 4 s heartbeat timeout) takes every fault but
// the last; a training job (LR, 2 servers, 3 workers, bounded delay 2)
// takes the last:
//   server-kill         kill -9 of a server: its ranges fail over;
//   server-stop         SIGSTOP of a server until its ranges failed over,
//                       then SIGCONT: it is fenced (exit 3);
//   server-pause        SIGSTOP for 1 s, then SIGCONT: it stays in the job;
//   scheduler-restart   kill -9 of the scheduler, a --recover one started
//                       on its port at once;
//   server-cut          (partitions only) a server cut off from the
//                       scheduler, the workers still reaching it, until its
//                       ranges failed over, then healed: fenced (exit 3);
//   server-blip         (partitions only) the same cut for 1 s: stays;
//   worker-blip         (partitions only) a worker cut off from every host
//                       for 1 s;
//   worker-kill         kill -9 of a training worker after its first
//                       progress report: its data goes to the others.
// What must hold: the check workers' sums are exact (every acknowledged
// push applied once: none lost, none twice), the training job counts every
// example of its epochs once and prints its final metrics, and every
// process exits 0 except the one hit (137 for a kill, 3 when fenced; a
// server hit by a 1 s pause or cut exits 0, or 3 where the machine stalled
// it past the heartbeat timeout too).
//
// Partitions need network namespaces (root; tests/harness/netns_lab.h):
// with `partitions` false every daemon runs on 127.0.0.1 and the cut
// faults are never picked.
#ifndef PETREL_TESTS_FAULT_FAULT_ROUND_H_
#define PETREL_TESTS_FAULT_FAULT_ROUND_H_

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace petrel {

enum class Fault {
  kServerKill,
  kServerStop,
  kServerPause,
  kSchedulerRestart,
  kServerCut,
  kServerBlip,
  kWorkerBlip,
  kWorkerKill,
};
inline constexpr int kNumFaults = 8;

// "server-kill", ... as in the file comment.
const char* FaultName(Fault fault);
// The faults a round may pick (the cut ones only with partitions).
std::vector<Fault> PickableFaults(bool partitions);

struct FaultRoundOptions {
  // Directory holding the daemons. Required.
  std::string bin_dir;
  // Holds train.svm and test.svm (FreshLrData) with `train_examples`
  // examples, for worker-kill rounds. Required.
  std::string data_dir;
  int train_examples = 60000;
  // Whether the daemons run in network namespaces (cut faults possible).
  bool partitions = false;
};

struct FaultRoundResult {
  Fault fault;
  // Key updates the check workers pushed, were acknowledged and found
  // applied exactly once (rounds x keys x workers); 0 in training rounds.
  int64_t verified_updates = 0;
  // Training examples the job counted (once each); 0 in check rounds.
  int64_t trained_examples = 0;
  absl::Duration length;
};

// Runs one round with `fault`. An error names what did not hold, with the
// daemons' output.
absl::StatusOr<FaultRoundResult> RunFaultRound(const FaultRoundOptions& options,
                                               Fault fault,
                                               std::mt19937_64& rng);

}  // namespace petrel

#endif  // PETREL_TESTS_FAULT_FAULT_ROUND_H_
