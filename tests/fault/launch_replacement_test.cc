// petrel-launch --replace_dead_servers with the real daemons on 127.0.0.1:
// check jobs push to 3 servers keeping 2 copies of each range; server 1 is
// killed with SIGKILL; once the scheduler failed its ranges over, the
// launcher starts a replacement petrel-server with the same flags, which
// copies the ranges and becomes a replica. The job ends with exit 0 and the
// check jobs' exact sums.
//
// And a killed scheduler: the launcher starts petrel-scheduler again with
// --recover on the same port, the nodes rejoin it, and the job (a check
// job with exact sums; a training job with its final metrics) finishes
// with exit 0.
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <dirent.h>
#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

#include "tests/harness/daemon_cluster.h"
#include "tests/harness/lr_job.h"

namespace petrel {
namespace {

constexpr absl::Duration kTimeout = absl::Seconds(90);

// The pid of the child of `parent` whose command line holds every one of
// `words` (its program's base name among them), or -1.
pid_t ChildWith(pid_t parent, const std::vector<std::string>& words) {
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return -1;
  pid_t found = -1;
  while (dirent* e = readdir(proc)) {
    int pid = 0;
    if (!absl::SimpleAtoi(e->d_name, &pid)) continue;
    std::ifstream stat(absl::StrCat("/proc/", pid, "/stat"));
    std::string line;
    std::getline(stat, line);
    // pid (comm) state ppid ...
    const size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 1));
    std::string state;
    int ppid = 0;
    if (!(rest >> state >> ppid) || ppid != parent) continue;
    std::ifstream cmd(absl::StrCat("/proc/", pid, "/cmdline"));
    std::string args((std::istreambuf_iterator<char>(cmd)),
                     std::istreambuf_iterator<char>());
    for (char& c : args) c = c == '\0' ? ' ' : c;
    args = " " + args + " ";
    // The program by its base name too: " /x/bin/petrel-scheduler " holds
    // " petrel-scheduler ".
    const size_t first = args.find(' ', 1);
    const size_t slash = args.rfind('/', first);
    if (slash != std::string::npos) {
      args.insert(first, " " + args.substr(slash + 1, first - slash - 1));
    }
    bool all = true;
    for (const std::string& w : words) {
      all = all && absl::StrContains(args, " " + w + " ");
    }
    if (all) {
      found = pid;
      break;
    }
  }
  closedir(proc);
  return found;
}

TEST(LaunchReplacementTest, LauncherReplacesAKilledServer) {
  absl::StatusOr<std::unique_ptr<Subprocess>> launch = StartProgram(
      {std::string(PETREL_BIN_DIR) + "/petrel-launch", "--num_servers=3",
       "--num_workers=2", "--replicas=2", "--replace_dead_servers",
       "--timeout_s=85", "--", "petrel-worker", "--job=check", "--rounds=40000",
       "--num_keys=300", "--inflight=8", "--timeout_s=60", "--bind=127.0.0.1"});
  ASSERT_TRUE(launch.ok()) << launch.status();
  Subprocess* l = launch->get();
  for (int rank = 0; rank < 2; ++rank) {
    ASSERT_TRUE(l->WaitForLine(absl::StrCat("[worker ", rank, "] PETREL_READY"),
                               kTimeout)
                    .ok())
        << l->Output();
  }
  const pid_t server1 = ChildWith(l->pid(), {"--rank=1", "--num_servers=3"});
  ASSERT_GT(server1, 0) << "no server 1 among petrel-launch's children";
  ASSERT_EQ(kill(server1, SIGKILL), 0);
  ASSERT_TRUE(l->WaitForLine("starting server 1 replacement 1", kTimeout).ok())
      << l->Output();
  ASSERT_TRUE(l->WaitForLine("is a replica again", kTimeout).ok())
      << l->Output();
  absl::StatusOr<int> code = l->Wait(kTimeout);
  ASSERT_TRUE(code.ok()) << code.status() << l->Output();
  const std::string out = l->Output();
  EXPECT_EQ(*code, 0) << out;
  EXPECT_TRUE(absl::StrContains(out, "[server 1 replacement 1] PETREL_READY"))
      << out;
  EXPECT_TRUE(absl::StrContains(out, "caught up")) << out;
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_TRUE(absl::StrContains(
        out, absl::StrCat("[worker ", rank, "] check rank=", rank)))
        << out;
  }
  EXPECT_FALSE(absl::StrContains(out, "ok=false")) << out;
}

// The launcher's --restart_scheduler (on by default): kill -9 of the
// scheduler while the check jobs push; a --recover scheduler on the same
// port takes over and every sum is exact.
TEST(LaunchReplacementTest, LauncherRestartsAKilledScheduler) {
  absl::StatusOr<std::unique_ptr<Subprocess>> launch = StartProgram(
      {std::string(PETREL_BIN_DIR) + "/petrel-launch", "--num_servers=2",
       "--num_workers=2", "--timeout_s=85", "--", "petrel-worker",
       "--job=check", "--rounds=20000", "--num_keys=300", "--inflight=8",
       "--timeout_s=60", "--bind=127.0.0.1"});
  ASSERT_TRUE(launch.ok()) << launch.status();
  Subprocess* l = launch->get();
  for (int rank = 0; rank < 2; ++rank) {
    ASSERT_TRUE(l->WaitForLine(absl::StrCat("[worker ", rank, "] PETREL_READY"),
                               kTimeout)
                    .ok())
        << l->Output();
  }
  const pid_t scheduler = ChildWith(l->pid(), {"petrel-scheduler"});
  ASSERT_GT(scheduler, 0) << "no scheduler among petrel-launch's children";
  ASSERT_EQ(kill(scheduler, SIGKILL), 0);
  ASSERT_TRUE(
      l->WaitForLine("starting scheduler restart 1 with --recover", kTimeout)
          .ok())
      << l->Output();
  absl::StatusOr<int> code = l->Wait(kTimeout);
  ASSERT_TRUE(code.ok()) << code.status() << l->Output();
  const std::string out = l->Output();
  EXPECT_EQ(*code, 0) << out;
  EXPECT_TRUE(absl::StrContains(out, "[scheduler restart 1] PETREL_LISTEN"))
      << out;
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_TRUE(absl::StrContains(
        out, absl::StrCat("[worker ", rank, "] check rank=", rank)))
        << out;
  }
  EXPECT_FALSE(absl::StrContains(out, "ok=false")) << out;
}

// The same under a training job (--config, its checkpoints on): killed
// after the first progress line, the job trains to its end and prints its
// final metrics.
TEST(LaunchReplacementTest,
     TrainingGoesOnAfterTheLauncherRestartedTheScheduler) {
  const std::string dir =
      absl::StrCat(::testing::TempDir(), "petrel_sched_restart_", getpid());
  ASSERT_TRUE(FreshLrData(PETREL_BIN_DIR, dir, 30000, kTimeout).ok());
  const std::string config = dir + "/job.textproto";
  std::ofstream(config) << LrJobText(dir, 2, 2)
                        << "train { batch_size: 256 epochs: 2 "
                           "progress_interval_s: 0.2 }\n"
                           "checkpoint { every_batches: 20 }\n";
  absl::StatusOr<std::unique_ptr<Subprocess>> launch = StartProgram(
      {std::string(PETREL_BIN_DIR) + "/petrel-launch", "--config=" + config,
       "--checkpoint_dir=" + dir + "/ckpt", "--timeout_s=85"});
  ASSERT_TRUE(launch.ok()) << launch.status();
  Subprocess* l = launch->get();
  ASSERT_TRUE(l->WaitForLine("progress epoch=", kTimeout).ok()) << l->Output();
  const pid_t scheduler = ChildWith(l->pid(), {"petrel-scheduler"});
  ASSERT_GT(scheduler, 0) << "no scheduler among petrel-launch's children";
  ASSERT_EQ(kill(scheduler, SIGKILL), 0);
  absl::StatusOr<int> code = l->Wait(kTimeout);
  ASSERT_TRUE(code.ok()) << code.status() << l->Output();
  const std::string out = l->Output();
  EXPECT_EQ(*code, 0) << out;
  EXPECT_TRUE(absl::StrContains(out, "starting scheduler restart 1")) << out;
  EXPECT_GT(ValueAfter(out, "final test_logloss", "test_logloss"), 0) << out;
  std::system(("rm -rf " + dir).c_str());
}

}  // namespace
}  // namespace petrel
