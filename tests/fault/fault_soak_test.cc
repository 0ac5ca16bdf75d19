// The short version of the randomized fault soak (tests/fault/fault_round.h;
// the long one is tools/fault/fault-soak.sh): one round of every fault
// kind, in an order shuffled by a seed printed with the result, each a
// fresh job of the real daemons; what must hold after each is
// tests/fault/fault_round.h's.
#include <algorithm>
#include <random>
#include <string>

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"

#include "tests/fault/fault_round.h"
#include "tests/harness/lr_job.h"
#include "tests/harness/netns_lab.h"

namespace petrel {
namespace {

TEST(FaultSoakTest, EveryFaultKindOnceInRandomOrderLosesNothing) {
  FaultRoundOptions options;
  options.bin_dir = PETREL_BIN_DIR;
  options.data_dir =
      absl::StrCat(::testing::TempDir(), "petrel_fault_soak_test_", getpid());
  ASSERT_TRUE(FreshLrData(options.bin_dir, options.data_dir,
                          options.train_examples, absl::Seconds(120))
                  .ok());
  {
    absl::StatusOr<std::unique_ptr<NetnsLab>> lab = NetnsLab::Create(1);
    options.partitions = lab.ok();
    if (!lab.ok()) {
      std::printf("the cut faults are left out: %s\n",
                  std::string(lab.status().message()).c_str());
    }
  }
  const uint64_t seed = static_cast<uint64_t>(absl::ToUnixNanos(absl::Now()));
  std::mt19937_64 rng(seed);
  std::vector<Fault> faults = PickableFaults(options.partitions);
  std::shuffle(faults.begin(), faults.end(), rng);
  int64_t updates = 0;
  for (Fault fault : faults) {
    absl::StatusOr<FaultRoundResult> r = RunFaultRound(options, fault, rng);
    ASSERT_TRUE(r.ok()) << FaultName(fault) << " (seed " << seed
                        << "): " << r.status();
    updates += r->verified_updates;
    std::printf("%s: ok in %.1fs\n", FaultName(fault),
                absl::ToDoubleSeconds(r->length));
  }
  EXPECT_GT(updates, 0);
  std::system(("rm -rf '" + options.data_dir + "'").c_str());
}

}  // namespace
}  // namespace petrel
