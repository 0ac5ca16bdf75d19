// petrel-launch end to end with the real daemons: a check job and
// petrel-bench on 2 servers and 2 workers succeed with prefixed output, and
// a failing worker command stops the whole job with exit 1.
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

#include "base/cpu_affinity.h"
#include "tests/harness/daemon_cluster.h"

namespace petrel {
namespace {

constexpr absl::Duration kExitTimeout = absl::Seconds(90);

std::string Bin(const std::string& name) {
  return std::string(PETREL_BIN_DIR) + "/" + name;
}

TEST(LaunchTest, CheckJobRunsEndToEndWithPrefixedOutput) {
  absl::StatusOr<std::unique_ptr<Subprocess>> launch =
      StartProgram({Bin("petrel-launch"), "--num_servers=2", "--num_workers=2",
                    "--timeout_s=80", "--", "petrel-worker", "--job=check",
                    "--bind=127.0.0.1"});
  ASSERT_TRUE(launch.ok()) << launch.status();
  absl::StatusOr<int> code = (*launch)->Wait(kExitTimeout);
  ASSERT_TRUE(code.ok()) << code.status();
  const std::string out = (*launch)->Output();
  EXPECT_EQ(*code, 0) << out;
  EXPECT_TRUE(absl::StrContains(out, "[scheduler] PETREL_LISTEN")) << out;
  // One warning for the job, from the launcher, not one per process.
  size_t warnings = 0;
  for (size_t at = out.find("the cluster is open"); at != std::string::npos;
       at = out.find("the cluster is open", at + 1)) {
    ++warnings;
  }
  EXPECT_EQ(warnings, 1u) << out;
  EXPECT_TRUE(absl::StrContains(out, "[server 1] PETREL_READY role=server"))
      << out;
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_TRUE(absl::StrContains(
        out, absl::StrCat("[worker ", rank, "] check rank=", rank,
                          " keys=1000 rounds=10 ok=true")))
        << out;
  }
}

// --metrics: every process serves /metrics on a free port of its own
// address, and petrel-launch prints each address.
TEST(LaunchTest, MetricsFlagPrintsEveryProcessMetricsAddress) {
  absl::StatusOr<std::unique_ptr<Subprocess>> launch =
      StartProgram({Bin("petrel-launch"), "--metrics", "--num_servers=1",
                    "--num_workers=1", "--timeout_s=80", "--", "petrel-worker",
                    "--job=check", "--bind=127.0.0.1"});
  ASSERT_TRUE(launch.ok()) << launch.status();
  absl::StatusOr<int> code = (*launch)->Wait(kExitTimeout);
  ASSERT_TRUE(code.ok()) << code.status();
  const std::string out = (*launch)->Output();
  EXPECT_EQ(*code, 0) << out;
  for (const char* name : {"scheduler", "server 0", "worker 0"}) {
    EXPECT_TRUE(absl::StrContains(
        out,
        absl::StrCat("petrel-launch: ", name, " metrics at http://127.0.0.1:")))
        << name << "\n"
        << out;
  }
}

// --curve: every process gets fresh CURVE keys; the job runs as without,
// and no process warns that the cluster is open.
TEST(LaunchTest, CurveJobRunsWithFreshKeys) {
  absl::StatusOr<std::unique_ptr<Subprocess>> launch =
      StartProgram({Bin("petrel-launch"), "--curve", "--num_servers=1",
                    "--num_workers=2", "--timeout_s=80", "--", "petrel-worker",
                    "--job=check", "--bind=127.0.0.1"});
  ASSERT_TRUE(launch.ok()) << launch.status();
  absl::StatusOr<int> code = (*launch)->Wait(kExitTimeout);
  ASSERT_TRUE(code.ok()) << code.status();
  const std::string out = (*launch)->Output();
  EXPECT_EQ(*code, 0) << out;
  EXPECT_TRUE(absl::StrContains(out, "[worker 1] check rank=1")) << out;
  EXPECT_FALSE(absl::StrContains(out, "the cluster is open")) << out;
}

// petrel-bench checks every answer: pulls return what was pushed, and each
// push-pull answers the sum of exactly the pushes before it, which holds
// only if the servers handle every worker's requests in the order sent.
// 4 MiB over 2 keys reaches the servers in parts of at most 1 MiB (slices
// of each key's values), sent from the main thread's own connections.
TEST(LaunchTest, BenchVerifiesPushesInSlicesOnTwoServers) {
  absl::StatusOr<std::unique_ptr<Subprocess>> launch =
      StartProgram({Bin("petrel-launch"), "--num_servers=2", "--num_workers=2",
                    "--timeout_s=80", "--", Bin("petrel-bench"),
                    "--workload=push,pull,pushpull", "--value_bytes=4194304",
                    "--num_keys=2", "--max_push_part_bytes=1048576",
                    "--inflight=4", "--iterations=30", "--bind=127.0.0.1"});
  ASSERT_TRUE(launch.ok()) << launch.status();
  absl::StatusOr<int> code = (*launch)->Wait(kExitTimeout);
  ASSERT_TRUE(code.ok()) << code.status();
  const std::string out = (*launch)->Output();
  EXPECT_EQ(*code, 0) << out;
  for (const char* workload : {"push", "pull", "pushpull"}) {
    for (int rank = 0; rank < 2; ++rank) {
      EXPECT_TRUE(absl::StrContains(
          out, absl::StrCat("[worker ", rank, "] workload=", workload,
                            " value_bytes=4194304")))
          << out;
    }
  }
  EXPECT_FALSE(absl::StrContains(out, "verified=false")) << out;
}

// --server_io_cpu reaches the servers (a CPU they may not use fails the
// job naming it), and pinned servers and bench still verify every answer.
TEST(LaunchTest, ServerIoCpuReachesTheServers) {
  const int cpu = FirstAllowedCpu();
  ASSERT_GE(cpu, 0);
  absl::StatusOr<std::unique_ptr<Subprocess>> launch =
      StartProgram({Bin("petrel-launch"), absl::StrCat("--server_io_cpu=", cpu),
                    "--num_servers=1", "--num_workers=1", "--timeout_s=80",
                    "--", Bin("petrel-bench"), "--workload=pull,raw_zmq_kv",
                    "--num_keys=2000", "--dim=16", "--iterations=50",
                    absl::StrCat("--io_cpu=", cpu), "--bind=127.0.0.1"});
  ASSERT_TRUE(launch.ok()) << launch.status();
  absl::StatusOr<int> code = (*launch)->Wait(kExitTimeout);
  ASSERT_TRUE(code.ok()) << code.status();
  std::string out = (*launch)->Output();
  EXPECT_EQ(*code, 0) << out;
  EXPECT_TRUE(absl::StrContains(out, "[worker 0] workload=pull")) << out;
  EXPECT_TRUE(absl::StrContains(out, "[worker 0] workload=raw_zmq_kv")) << out;
  EXPECT_FALSE(absl::StrContains(out, "verified=false")) << out;

  launch =
      StartProgram({Bin("petrel-launch"), "--server_io_cpu=1023",
                    "--num_servers=1", "--num_workers=1", "--timeout_s=80",
                    "--", "petrel-worker", "--job=check", "--bind=127.0.0.1"});
  ASSERT_TRUE(launch.ok()) << launch.status();
  code = (*launch)->Wait(kExitTimeout);
  ASSERT_TRUE(code.ok()) << code.status();
  out = (*launch)->Output();
  EXPECT_NE(*code, 0) << out;
  EXPECT_TRUE(absl::StrContains(out, "CPU 1023")) << out;
}

TEST(LaunchTest, FailingWorkerStopsTheJobWithExitOne) {
  const absl::Time start = absl::Now();
  absl::StatusOr<std::unique_ptr<Subprocess>> launch = StartProgram(
      {Bin("petrel-launch"), "--num_servers=2", "--num_workers=2",
       "--timeout_s=80", "--grace_period_s=5", "--", "/bin/false"});
  ASSERT_TRUE(launch.ok()) << launch.status();
  absl::StatusOr<int> code = (*launch)->Wait(kExitTimeout);
  ASSERT_TRUE(code.ok()) << code.status();
  const std::string out = (*launch)->Output();
  EXPECT_EQ(*code, 1) << out;
  EXPECT_TRUE(absl::StrContains(out, "exited with code 1")) << out;
  // It stopped the daemons (the scheduler reports the signal) rather than
  // waiting for their join timeout (60 s).
  EXPECT_TRUE(
      absl::StrContains(out, "[scheduler] petrel-scheduler: SIGTERM received"))
      << out;
  EXPECT_LT(absl::Now() - start, absl::Seconds(45)) << out;
}

}  // namespace
}  // namespace petrel
