// fault_soak: the randomized fault soak (docs/failures.md, "Soak"). Runs
// rounds of tests/fault/fault_round.h, each a fresh job of the real daemons
// hit by one fault picked at random, until SECONDS have passed; prints one
// line per round and a summary (faults by kind, key updates verified, lost
// updates: always 0, or it stops at the first round that did not hold and
// exits 1 with the daemons' output).
//
//   fault_soak SECONDS [SEED]
//
// Partitions (cut faults) when network namespaces can be made (root);
// otherwise it says so and runs the other faults on 127.0.0.1. Run by
// tools/fault/fault-soak.sh.
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <string>

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

#include "tests/fault/fault_round.h"
#include "tests/harness/lr_job.h"
#include "tests/harness/netns_lab.h"

int main(int argc, char** argv) {
  using namespace petrel;
  const int seconds = argc > 1 ? std::atoi(argv[1]) : 0;
  const uint64_t seed =
      argc > 2 ? std::strtoull(argv[2], nullptr, 10)
               : static_cast<uint64_t>(absl::ToUnixNanos(absl::Now()));
  if (seconds < 1) {
    std::fprintf(stderr, "usage: fault_soak SECONDS [SEED]\n");
    return 2;
  }
  FaultRoundOptions options;
  options.bin_dir = PETREL_BIN_DIR;
  options.data_dir = absl::StrCat("/tmp/petrel-fault-soak-", getpid());
  absl::Status data = FreshLrData(options.bin_dir, options.data_dir,
                                  options.train_examples, absl::Seconds(120));
  if (!data.ok()) {
    std::fprintf(stderr, "fault_soak: %s\n", data.ToString().c_str());
    return 1;
  }
  {
    absl::StatusOr<std::unique_ptr<NetnsLab>> lab = NetnsLab::Create(1);
    options.partitions = lab.ok();
    if (!lab.ok()) {
      std::printf("no partitions (%s): the other faults only\n",
                  std::string(lab.status().message()).c_str());
    }
  }
  std::printf("seed %llu, %d s, partitions %s\n",
              static_cast<unsigned long long>(seed), seconds,
              options.partitions ? "on" : "off");
  std::mt19937_64 rng(seed);
  const std::vector<Fault> faults = PickableFaults(options.partitions);
  std::map<std::string, int> by_kind;
  int64_t updates = 0;
  int64_t examples = 0;
  int rounds = 0;
  const absl::Time end = absl::Now() + absl::Seconds(seconds);
  int rc = 0;
  while (absl::Now() < end) {
    const Fault fault = faults[std::uniform_int_distribution<size_t>(
        0, faults.size() - 1)(rng)];
    absl::StatusOr<FaultRoundResult> r = RunFaultRound(options, fault, rng);
    ++rounds;
    if (!r.ok()) {
      std::printf("round %d %s: FAILED\n%s\n", rounds, FaultName(fault),
                  r.status().ToString().c_str());
      rc = 1;
      break;
    }
    ++by_kind[FaultName(fault)];
    updates += r->verified_updates;
    examples += r->trained_examples;
    std::printf("round %d %s: ok in %.1fs\n", rounds, FaultName(fault),
                absl::ToDoubleSeconds(r->length));
    std::fflush(stdout);
  }
  std::string kinds;
  for (const auto& [kind, n] : by_kind)
    absl::StrAppend(&kinds, " ", kind, "=", n);
  std::printf(
      "fault soak: %d rounds, %d faults injected (%s ), %lld key updates "
      "acknowledged and verified, %lld training examples counted once, "
      "%s\n",
      rounds, rounds - rc, kinds.c_str(), static_cast<long long>(updates),
      static_cast<long long>(examples),
      rc == 0 ? "0 acknowledged updates lost" : "STOPPED at a failed round");
  std::system(("rm -rf '" + options.data_dir + "'").c_str());
  return rc;
}
