// The scheduler's death with the real daemons on 127.0.0.1 (2 servers, 2
// petrel-worker --job=check workers, short heartbeats): after kill -9 of
// the scheduler, every node notices within a few heartbeats and
//  - with no scheduler coming back, stops within --scheduler_grace_s with
//    the line "scheduler HOST:PORT unreachable for N s; stopping" and exit
//    code 1: nothing waits forever for a barrier or TERMINATE;
//  - with the scheduler restarted with --recover on the same port (before
//    or after the nodes noticed), rejoins it with its id; the job ends
//    normally (exit 0 everywhere) with the exact sums of the check job, or
//    with a training job (petrel-worker --job=train, bounded delay) that
//    completes and evaluates;
//  - with CURVE on, a scheduler restarted with the same keypair is taken
//    back the same way (the nodes accept control only from that key).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <signal.h>
#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

#include "tests/harness/cluster_keys.h"
#include "tests/harness/daemon_cluster.h"
#include "tests/harness/lr_job.h"

namespace petrel {
namespace {

constexpr int kServers = 2;
constexpr int kWorkers = 2;
// --scheduler_grace_s where no scheduler returns.
constexpr int kGraceS = 3;
// Where one does: the grace must cover noticing the loss (1 s), starting
// the new scheduler (a second or more on a loaded machine) and ZeroMQ's
// reconnect to it (backing off up to 1 s), or a node may give up first.
constexpr int kRecoverGraceS = 15;
// Enough pushes that the workers are still pushing when the scheduler dies
// (the data plane must go on without it); they then wait at a barrier.
constexpr int kRounds = 3000;
// How long anything may take here; the machine may be loaded.
constexpr absl::Duration kAllowed = absl::Seconds(60);

// With CURVE: a key per role.
std::vector<std::pair<std::string, std::string>> KeyRoles() {
  return {
      {"scheduler", "scheduler"}, {"server", "server"}, {"worker", "worker"}};
}

std::vector<std::string> Concat(std::vector<std::string> a,
                                const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

struct Job {
  // `config`: a training job's config (petrel-worker --job=train); empty:
  // the check job. `keys`: CURVE on with these keys (outlive the job);
  // null: off.
  explicit Job(int grace_s, std::string config = "",
               const ClusterKeys* keys = nullptr)
      : config(std::move(config)), keys(keys), cluster([this, grace_s] {
          DaemonCluster::Options o;
          o.bin_dir = PETREL_BIN_DIR;
          o.num_servers = kServers;
          o.num_workers = kWorkers;
          o.flags = {"--join_timeout_s=20", "--heartbeat_interval_ms=200",
                     absl::StrCat("--scheduler_grace_s=", grace_s)};
          if (!this->config.empty()) {
            o.flags.push_back("--config=" + this->config);
          }
          if (this->keys != nullptr) {
            o.scheduler_flags = this->keys->Flags("scheduler");
          }
          return o;
        }()) {}

  // Starts the job; returns once every node is ready.
  void Start() {
    ASSERT_TRUE(cluster.StartScheduler().ok()) << cluster.Output();
    for (int i = 0; i < kServers; ++i) {
      absl::StatusOr<Subprocess*> s =
          cluster.StartNode("petrel-server", KeyFlags("server"));
      ASSERT_TRUE(s.ok()) << s.status();
      nodes.push_back(*s);
    }
    for (int i = 0; i < kWorkers; ++i) {
      absl::StatusOr<Subprocess*> w =
          config.empty()
              ? cluster.StartNode(
                    "petrel-worker",
                    Concat(KeyFlags("worker"),
                           {"--job=check", absl::StrCat("--rounds=", kRounds),
                            "--num_keys=100", "--timeout_s=30"}))
              : cluster.StartNode("petrel-worker",
                                  Concat(KeyFlags("worker"),
                                         {"--job=train", "--timeout_s=30"}));
      ASSERT_TRUE(w.ok()) << w.status();
      nodes.push_back(*w);
      workers.push_back(*w);
    }
    for (Subprocess* n : nodes) {
      ASSERT_TRUE(cluster.WaitReady(n).ok()) << cluster.Output();
    }
  }

  // The CURVE flags of a daemon holding `name`'s key; none without keys.
  std::vector<std::string> KeyFlags(const std::string& name) const {
    return keys == nullptr ? std::vector<std::string>{} : keys->Flags(name);
  }

  // Kills the scheduler and waits until it is gone (its port is free).
  void KillScheduler() {
    cluster.scheduler()->Signal(SIGKILL);
    ASSERT_TRUE(cluster.scheduler()->Wait(kAllowed).ok());
  }

  // petrel-scheduler --recover (or, `recover` false, a new job's scheduler)
  // on the dead one's port.
  std::unique_ptr<Subprocess> Recover(bool recover = true) {
    std::vector<std::string> argv = {
        std::string(PETREL_BIN_DIR) + "/petrel-scheduler",
        absl::StrCat("--port=", cluster.scheduler_announce().port),
        recover ? "--recover" : "--recover=false",
        absl::StrCat("--num_servers=", kServers),
        absl::StrCat("--num_workers=", kWorkers),
        "--join_timeout_s=20",
        "--heartbeat_interval_ms=200"};
    if (!config.empty()) argv.push_back("--config=" + config);
    for (const std::string& f : LoopbackFlags()) argv.push_back(f);
    // The same keypair as the dead scheduler's.
    for (const std::string& f : KeyFlags("scheduler")) argv.push_back(f);
    absl::StatusOr<std::unique_ptr<Subprocess>> s = StartProgram(argv);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? *std::move(s) : nullptr;
  }

  const std::string config;
  const ClusterKeys* const keys;
  DaemonCluster cluster;
  std::vector<Subprocess*> nodes;
  std::vector<Subprocess*> workers;
};

TEST(SchedulerDeathTest, WithoutSchedulerEveryNodeStopsWithinTheGrace) {
  Job job(kGraceS);
  job.Start();
  if (HasFatalFailure()) return;
  const absl::Time killed = absl::Now();
  job.KillScheduler();
  if (HasFatalFailure()) return;
  const std::string line = absl::StrCat(
      "scheduler ", job.cluster.scheduler_address(), " unreachable for ");
  absl::Duration slowest;
  for (Subprocess* n : job.nodes) {
    absl::StatusOr<int> code = n->Wait(absl::Seconds(kGraceS) + kAllowed);
    ASSERT_TRUE(code.ok()) << "a node still runs "
                           << absl::Seconds(kGraceS) + kAllowed
                           << " after the scheduler's death\n"
                           << job.cluster.Output();
    slowest = std::max(slowest, absl::Now() - killed);
    EXPECT_EQ(*code, 1) << n->Output();
    const std::string out = n->Output();
    EXPECT_TRUE(absl::StrContains(out, "lost the scheduler")) << out;
    // The one line on stderr, with the daemon's name.
    EXPECT_TRUE(absl::StrContains(out, absl::StrCat(": ", line)) ||
                absl::StrContains(out, absl::StrCat("barrier: ", line)))
        << out;
  }
  std::fprintf(stderr, "every node stopped %s after the kill (grace %ds)\n",
               absl::FormatDuration(slowest).c_str(), kGraceS);
}

// Kills the scheduler, restarts it with --recover (`after_notice`: once a
// worker logged the loss; else at once) and checks that the job ends
// normally with exact sums.
void RecoverAndFinish(bool after_notice, const std::string& config = "",
                      const ClusterKeys* keys = nullptr) {
  Job job(kRecoverGraceS, config, keys);
  job.Start();
  if (::testing::Test::HasFatalFailure()) return;
  const absl::Time killed = absl::Now();
  job.KillScheduler();
  if (::testing::Test::HasFatalFailure()) return;
  if (after_notice) {
    for (Subprocess* n : job.nodes) {
      ASSERT_TRUE(n->WaitForLine("lost the scheduler", kAllowed).ok())
          << job.cluster.Output();
    }
    std::fprintf(stderr, "every node noticed %s after the kill\n",
                 absl::FormatDuration(absl::Now() - killed).c_str());
  }
  const absl::Time restarted = absl::Now();
  std::unique_ptr<Subprocess> scheduler = job.Recover();
  ASSERT_NE(scheduler, nullptr);
  absl::StatusOr<int> code = scheduler->Wait(kAllowed);
  ASSERT_TRUE(code.ok()) << "the recovered scheduler still runs\n"
                         << scheduler->Output() << job.cluster.Output();
  EXPECT_EQ(*code, 0) << scheduler->Output();
  const std::string sched = scheduler->Output();
  EXPECT_TRUE(absl::StrContains(sched, "recovered the job")) << sched;
  for (Subprocess* n : job.nodes) {
    absl::StatusOr<int> c = n->Wait(kAllowed);
    ASSERT_TRUE(c.ok()) << job.cluster.Output();
    EXPECT_EQ(*c, 0) << n->Output();
    EXPECT_TRUE(absl::StrContains(n->Output(), "took node")) << n->Output();
  }
  if (config.empty()) {
    for (Subprocess* w : job.workers) {
      EXPECT_TRUE(absl::StrContains(w->Output(), " ok=true")) << w->Output();
    }
  } else {
    std::string out;
    for (Subprocess* w : job.workers) out += w->Output();
    EXPECT_GT(ValueAfter(out, "final test_logloss", "test_logloss"), 0) << out;
  }
  std::fprintf(stderr,
               "the job ended %s after the kill, %s after the restart\n",
               absl::FormatDuration(absl::Now() - killed).c_str(),
               absl::FormatDuration(absl::Now() - restarted).c_str());
  if (keys != nullptr) {
    // Nothing was dropped for coming from another key than the scheduler's.
    EXPECT_FALSE(absl::StrContains(job.cluster.Output(),
                                   "control_not_from_scheduler_key"))
        << job.cluster.Output();
  }
}

TEST(SchedulerDeathTest, SchedulerRestartedWithRecoverAtOnceFinishesTheJob) {
  RecoverAndFinish(/*after_notice=*/false);
}

TEST(SchedulerDeathTest, SchedulerRestartedAfterTheNodesNoticedFinishesTheJob) {
  RecoverAndFinish(/*after_notice=*/true);
}

// With CURVE on, a scheduler restarted with the dead one's keypair is the
// scheduler: the nodes accept its control and rejoin it.
TEST(SchedulerDeathTest,
     WithCurveASchedulerRestartedWithItsKeysFinishesTheJob) {
  ClusterKeys keys(KeyRoles());
  RecoverAndFinish(/*after_notice=*/true, "", &keys);
}

// A scheduler restarted without --recover refuses the rejoins: the nodes
// stop at once with its reason instead of waiting out the grace.
TEST(SchedulerDeathTest, SchedulerRestartedWithoutRecoverStopsTheNodes) {
  Job job(kRecoverGraceS);
  job.Start();
  if (HasFatalFailure()) return;
  job.KillScheduler();
  if (HasFatalFailure()) return;
  std::unique_ptr<Subprocess> scheduler = job.Recover(/*recover=*/false);
  ASSERT_NE(scheduler, nullptr);
  for (Subprocess* n : job.nodes) {
    absl::StatusOr<int> code = n->Wait(kAllowed);
    ASSERT_TRUE(code.ok()) << job.cluster.Output() << scheduler->Output();
    EXPECT_EQ(*code, 1) << n->Output();
    EXPECT_TRUE(
        absl::StrContains(n->Output(),
                          "refused to take this node back: this scheduler "
                          "started a new job; restart it with --recover"))
        << n->Output();
  }
}

// Training (bounded delay 2) goes on while the scheduler is away; the
// restarted one ends the job with the final evaluation.
TEST(SchedulerDeathTest, TrainingFinishesAfterARestartedScheduler) {
  const std::string dir =
      absl::StrCat(::testing::TempDir(), "petrel_scheduler_death_", getpid());
  ASSERT_EQ(
      std::system(("rm -rf '" + dir + "' && mkdir -p '" + dir + "'").c_str()),
      0);
  ASSERT_TRUE(GenerateLrData(PETREL_BIN_DIR, dir, 20000, kAllowed).ok());
  const std::string config = dir + "/job.textproto";
  std::ofstream(config) << LrJobText(dir, kWorkers, /*max_delay=*/2)
                        << "train { batch_size: 256 epochs: 6 }\n";
  RecoverAndFinish(/*after_notice=*/true, config);
  std::system(("rm -rf '" + dir + "'").c_str());
}

}  // namespace
}  // namespace petrel
