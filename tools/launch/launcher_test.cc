#include "tools/launch/launcher.h"

#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "tools/launch/executable_path.h"
#include "tools/launch/subprocess.h"

namespace petrel {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr absl::Duration kDeadline = absl::Seconds(30);

// Fake petrel-scheduler: announces a port, waits until every worker has
// written to the workers_done FIFO, releases the servers and waits for their
// acknowledgements (so no release is lost in a FIFO nobody has opened), then
// exits 0. With the scheduler_ignores_workers file it never exits by itself.
// With the kill_scheduler file and without --recover it kills itself with
// SIGKILL once a worker started (the workers_started FIFO); started with
// --recover, it first tells each worker it is back (scheduler_back), as a
// real one answers the rejoins.
constexpr char kSchedulerScript[] = R"(#!/bin/sh
dir='DIR'
workers=0; servers=0; recover=0
for arg in "$@"; do
  case "$arg" in
    --num_workers=*) workers=${arg#--num_workers=} ;;
    --num_servers=*) servers=${arg#--num_servers=} ;;
    --recover) recover=1 ;;
  esac
done
exec 3<>"$dir/workers_done" 4<>"$dir/servers_stop" 5<>"$dir/servers_acked"
exec 6<>"$dir/workers_started"
echo "scheduler args: $*"
echo "PETREL_LISTEN role=scheduler host=127.0.0.1 port=12345"
if [ -e "$dir/scheduler_ignores_workers" ]; then exec sleep 1000; fi
if [ -e "$dir/kill_scheduler" ] && [ $recover = 0 ]; then
  read -r line <&6; kill -9 $$
fi
# Opened here only: a worker waiting on it must not see the dead one close it.
if [ $recover = 1 ]; then
  exec 7<>"$dir/scheduler_back"
  i=0; while [ $i -lt $workers ]; do echo back >&7; i=$((i+1)); done
fi
i=0; while [ $i -lt $workers ]; do read -r line <&3; i=$((i+1)); done
i=0; while [ $i -lt $servers ]; do echo stop >&4; i=$((i+1)); done
i=0; while [ $i -lt $servers ]; do read -r line <&5; i=$((i+1)); done
echo "scheduler done"
)";

constexpr char kServerScript[] = R"(#!/bin/sh
dir='DIR'
exec 4<>"$dir/servers_stop" 5<>"$dir/servers_acked"
echo "server args: $*"
case " $* " in
  # Counted by the fake scheduler, then killed (a replica takes over).
  *" --rank=1 "*) if [ -e "$dir/kill_server_1" ]; then
    read -r line <&4; echo ack >&5; kill -9 $$; fi ;;
esac
read -r line <&4
echo ack >&5
echo "server stopping"
)";

// Fake worker. $1: "ok", "hang", "fail-rank-N" (rank N exits 4),
// "bad-config-rank-N" (rank N exits 2, as for a bad config) or
// "kill-rank-N" (rank N kills itself with SIGKILL once the fake scheduler
// counted it, as the real one counts a worker it lost) or "leave-rank-N"
// (rank N exits 3 once counted, as a worker declared dead while it hung).
constexpr char kWorkerScript[] = R"(#!/bin/sh
dir='DIR'
echo "env role=$DMLC_ROLE uri=$DMLC_PS_ROOT_URI port=$DMLC_PS_ROOT_PORT" \
  "servers=$DMLC_NUM_SERVER workers=$DMLC_NUM_WORKER host=$DMLC_NODE_HOST" \
  "rank=$PETREL_RANK scheduler=$PETREL_SCHEDULER"
case "$1" in
  fail-rank-"$PETREL_RANK") echo "failing on purpose" >&2; exit 4 ;;
  leave-rank-"$PETREL_RANK") echo done > "$dir/workers_done"; exit 3 ;;
  bad-config-rank-"$PETREL_RANK") echo "bad config" >&2; exit 2 ;;
  kill-rank-"$PETREL_RANK") echo done > "$dir/workers_done"; kill -9 $$ ;;
  hang) echo ready; exec sleep 1000 ;;
esac
if [ -e "$dir/kill_scheduler" ]; then
  echo started > "$dir/workers_started"
  read -r line < "$dir/scheduler_back"
fi
echo done > "$dir/workers_done"
)";

constexpr const char* kFiles[] = {"petrel-scheduler",
                                  "petrel-server",
                                  "petrel-fake-worker",
                                  "workers_done",
                                  "servers_stop",
                                  "servers_acked",
                                  "scheduler_ignores_workers",
                                  "kill_server_1",
                                  "kill_scheduler",
                                  "workers_started",
                                  "scheduler_back",
                                  "job.textproto",
                                  "ssh"};

// Fake ssh: runs the remote command (its last argument) here, after saying
// which host it was for.
constexpr char kSshScript[] = R"(#!/bin/sh
while [ "$1" != "--" ]; do shift; done
echo "ssh to $2"
exec /bin/sh -c "$3"
)";

struct Result {
  int exit_code = -1;
  std::string output;
};

class LauncherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string dir_template = ::testing::TempDir() + "petrel_launch_XXXXXX";
    ASSERT_NE(mkdtemp(dir_template.data()), nullptr);
    dir_ = dir_template;
    for (const char* fifo : {"workers_done", "servers_stop", "servers_acked",
                             "workers_started", "scheduler_back"}) {
      ASSERT_EQ(mkfifo(Path(fifo).c_str(), 0600), 0) << fifo;
    }
    WriteExecutable("petrel-scheduler", kSchedulerScript);
    WriteExecutable("petrel-server", kServerScript);
    WriteExecutable("petrel-fake-worker", kWorkerScript);
  }

  void TearDown() override {
    for (const char* file : kFiles) unlink(Path(file).c_str());
    rmdir(dir_.c_str());
  }

  std::string Path(const std::string& name) const {
    return absl::StrCat(dir_, "/", name);
  }

  void WriteExecutable(const std::string& name, const char* script) {
    std::ofstream(Path(name)) << absl::StrReplaceAll(script, {{"DIR", dir_}});
    ASSERT_EQ(chmod(Path(name).c_str(), 0755), 0);
  }

  std::unique_ptr<Subprocess> StartLaunch(
      std::vector<std::string> args,
      std::vector<std::pair<std::string, std::string>> env = {}) {
    Subprocess::Options options;
    options.env = std::move(env);
    options.argv = {PETREL_LAUNCH_BINARY, "--bin_dir=" + dir_,
                    "--grace_period_s=5"};
    options.argv.insert(options.argv.end(), args.begin(), args.end());
    absl::StatusOr<std::unique_ptr<Subprocess>> proc =
        Subprocess::Start(std::move(options));
    EXPECT_TRUE(proc.ok()) << proc.status();
    return proc.ok() ? *std::move(proc) : nullptr;
  }

  Result RunLaunch(std::vector<std::string> args,
                   std::vector<std::pair<std::string, std::string>> env = {}) {
    Result result;
    std::unique_ptr<Subprocess> proc =
        StartLaunch(std::move(args), std::move(env));
    if (proc == nullptr) return result;
    absl::StatusOr<int> code = proc->Wait(kDeadline);
    EXPECT_TRUE(code.ok()) << code.status();
    result.exit_code = code.ok() ? *code : -1;
    result.output = proc->Output();
    return result;
  }

  // Runs `options` in this process, its workers' output dropped; returns
  // the exit code and the status lines the launcher printed.
  static std::pair<int, std::vector<std::string>> RunCollectingStatus(
      Launcher::Options options) {
    absl::Mutex mu;
    std::vector<std::string> status;
    options.print_output = [](std::string_view) {};
    options.print_status = [&](std::string_view line) {
      absl::MutexLock lock(&mu);
      status.emplace_back(line);
    };
    const int code = Launcher(std::move(options)).Run();
    absl::MutexLock lock(&mu);
    return {code, status};
  }

  std::string dir_;
};

// Every line is whole: a child line with its prefix, or a launcher report.
void ExpectWholeLines(const std::string& output) {
  for (absl::string_view line :
       absl::StrSplit(output, '\n', absl::SkipEmpty())) {
    EXPECT_TRUE(absl::StartsWith(line, "[scheduler] ") ||
                absl::StartsWith(line, "[scheduler restart ") ||
                absl::StartsWith(line, "[server ") ||
                absl::StartsWith(line, "[worker ") ||
                absl::StartsWith(line, "petrel-launch: "))
        << line;
  }
}

TEST_F(LauncherTest, RunsJobAndPrefixesOutput) {
  Result result = RunLaunch(
      {"--num_servers=2", "--num_workers=2", "--", "petrel-fake-worker", "ok"});
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output,
              HasSubstr("[scheduler] scheduler args: --port=0 --num_servers=2 "
                        "--num_workers=2 --advertise_host=127.0.0.1\n"));
  EXPECT_THAT(result.output,
              HasSubstr("[scheduler] PETREL_LISTEN role=scheduler "
                        "host=127.0.0.1 port=12345\n"));
  for (int i = 0; i < 2; ++i) {
    EXPECT_THAT(result.output,
                HasSubstr(absl::StrCat(
                    "[server ", i,
                    "] server args: --scheduler=127.0.0.1:12345 --port=0 "
                    "--advertise_host=127.0.0.1 --rank=",
                    i, " --num_servers=2 --num_workers=2\n")));
    EXPECT_THAT(result.output,
                HasSubstr(absl::StrCat("[server ", i, "] server stopping\n")));
  }
  EXPECT_THAT(result.output, HasSubstr("[scheduler] scheduler done\n"));
  // The one line of petrel-launch's own: the job's open-cluster warning.
  std::string rest = result.output;
  ASSERT_EQ(rest.rfind("petrel-launch: warning: the cluster is open", 0), 0u)
      << rest;
  rest.erase(0, rest.find('\n') + 1);
  EXPECT_THAT(rest, Not(HasSubstr("petrel-launch: ")));
  ExpectWholeLines(result.output);
}

TEST_F(LauncherTest, PassesEnvironmentToWorkers) {
  Result result = RunLaunch({"--num_servers=3", "--num_workers=2", "--",
                             Path("petrel-fake-worker"), "ok"});
  EXPECT_EQ(result.exit_code, 0) << result.output;
  for (int i = 0; i < 2; ++i) {
    EXPECT_THAT(result.output,
                HasSubstr(absl::StrCat(
                    "[worker ", i,
                    "] env role=worker uri=127.0.0.1 port=12345 servers=3 "
                    "workers=2 host=127.0.0.1 rank=",
                    i, " scheduler=127.0.0.1:12345\n")));
  }
}

TEST_F(LauncherTest, FailingWorkerStopsJobAndIsNamed) {
  Result result = RunLaunch({"--num_servers=1", "--num_workers=2", "--",
                             "petrel-fake-worker", "fail-rank-1"});
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_THAT(result.output, HasSubstr("[worker 1] failing on purpose\n"));
  EXPECT_THAT(result.output,
              HasSubstr("petrel-launch: worker 1 exited with code 4; "
                        "stopping the job\n"));
  ExpectWholeLines(result.output);
}

// With survive_worker_kills (--config) a worker killed by a signal does not
// stop the job: it ends as the scheduler says.
TEST_F(LauncherTest, AChildExitingWithCode2MakesTheLauncherExit2) {
  Result result = RunLaunch({"--num_servers=1", "--num_workers=2", "--",
                             "petrel-fake-worker", "bad-config-rank-0"});
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_THAT(result.output,
              HasSubstr("petrel-launch: worker 0 exited with code 2 (bad "
                        "flags, config or data); stopping the job\n"));
}

TEST_F(LauncherTest, HostsRunEachProcessOverSshOnItsAddress) {
  WriteExecutable("ssh", kSshScript);
  absl::Mutex mu;
  std::vector<std::string> output;
  Launcher::Options options;
  options.num_servers = 2;
  options.num_workers = 2;
  options.bin_dir = dir_;
  options.command = {"petrel-fake-worker", "ok"};
  options.hosts = *ParseHostsFile(
      "127.0.0.2 roles=scheduler\nnode3 slots=2\n"
      "bob@127.0.0.4 roles=server,worker\n",
      "hosts");
  options.ssh.program = Path("ssh");
  options.remote_env = {{"PETREL_EXTRA", "x"}, {"PETREL_RANK", "99"}};
  options.print_output = [&](std::string_view line) {
    absl::MutexLock lock(&mu);
    output.emplace_back(line);
  };
  options.print_status = [](std::string_view) {};
  EXPECT_EQ(Launcher(options).Run(), 0);
  absl::MutexLock lock(&mu);
  using ::testing::Contains;
  EXPECT_THAT(output, Contains("[scheduler@127.0.0.2] ssh to 127.0.0.2"));
  EXPECT_THAT(output, Contains("[scheduler@127.0.0.2] scheduler args: "
                               "--port=0 --num_servers=2 --num_workers=2 "
                               "--advertise_host=127.0.0.2 "
                               "--bind=127.0.0.2"));
  // A name is advertised but not bound; user@ is not part of the address.
  EXPECT_THAT(output, Contains("[server 0@node3] server args: "
                               "--scheduler=127.0.0.2:12345 --port=0 "
                               "--advertise_host=node3 --rank=0 "
                               "--num_servers=2 --num_workers=2"));
  EXPECT_THAT(output, Contains("[server 1@bob@127.0.0.4] server args: "
                               "--scheduler=127.0.0.2:12345 --port=0 "
                               "--advertise_host=127.0.0.4 --rank=1 "
                               "--num_servers=2 --num_workers=2 "
                               "--bind=127.0.0.4"));
  EXPECT_THAT(output, Contains("[worker 1@bob@127.0.0.4] env role=worker "
                               "uri=127.0.0.2 port=12345 servers=2 workers=2 "
                               "host=127.0.0.4 rank=1 "
                               "scheduler=127.0.0.2:12345"));
}

TEST_F(LauncherTest, AKilledWorkerDoesNotStopAJobThatSurvivesIt) {
  Launcher::Options options;
  options.num_servers = 1;
  options.num_workers = 2;
  options.bin_dir = dir_;
  options.command = {"petrel-fake-worker", "kill-rank-1"};
  options.survive_worker_kills = true;
  auto [code, status] = RunCollectingStatus(options);
  EXPECT_EQ(code, 0);
  EXPECT_THAT(status, ::testing::ElementsAre(
                          "petrel-launch: worker 1 was killed by signal 9; "
                          "the job goes on without it"));
  // Without it the job stops.
  options.survive_worker_kills = false;
  EXPECT_EQ(RunCollectingStatus(options).first, 1);
}

// A worker declared dead while it hung (SIGSTOP) that came back and was
// told it is out of the job exits 3: it left, as if killed, where the job
// survives a lost worker; elsewhere it stops the job, saying why.
TEST_F(LauncherTest, AWorkerThatLeftAfterBeingDeclaredDeadIsLostNotFailed) {
  Launcher::Options options;
  options.num_servers = 1;
  options.num_workers = 2;
  options.bin_dir = dir_;
  options.command = {"petrel-fake-worker", "leave-rank-1"};
  options.survive_worker_kills = true;
  auto [code, status] = RunCollectingStatus(options);
  EXPECT_EQ(code, 0);
  EXPECT_THAT(status,
              ::testing::ElementsAre(
                  "petrel-launch: worker 1 was declared dead while it did not "
                  "answer, and out of the job; the job goes on without it"));
  options.survive_worker_kills = false;
  auto [stopped, lines] = RunCollectingStatus(options);
  EXPECT_EQ(stopped, 1);
  EXPECT_THAT(lines, ::testing::Contains(HasSubstr(
                         "worker 1 exited with code 3 (declared dead")));
}

// With survive_server_kills (--replicas >= 2) a server killed by a signal
// does not stop the job either: its ranges failed over.
TEST_F(LauncherTest, AKilledServerDoesNotStopAJobThatSurvivesIt) {
  std::ofstream(dir_ + "/kill_server_1") << "1\n";
  Launcher::Options options;
  options.num_servers = 2;
  options.num_workers = 1;
  options.bin_dir = dir_;
  options.command = {"petrel-fake-worker", "ok"};
  options.survive_server_kills = true;
  auto [code, status] = RunCollectingStatus(options);
  EXPECT_EQ(code, 0);
  EXPECT_THAT(status, ::testing::ElementsAre(
                          "petrel-launch: server 1 was killed by signal 9; "
                          "the job goes on without it"));
  options.survive_server_kills = false;
  EXPECT_EQ(RunCollectingStatus(options).first, 1);
}

// A scheduler killed while the workers run is started again with
// --recover on the port it announced, and the job finishes; without
// restart_killed_scheduler (or past max_scheduler_restarts) its death
// stops the job.
TEST_F(LauncherTest, AKilledSchedulerIsRestartedWithRecoverOnItsPort) {
  std::ofstream(dir_ + "/kill_scheduler") << "1\n";
  Result result = RunLaunch(
      {"--num_servers=1", "--num_workers=1", "--", "petrel-fake-worker", "ok"});
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output,
              HasSubstr("petrel-launch: the scheduler was killed by signal 9; "
                        "starting scheduler restart 1 with --recover on port "
                        "12345"));
  EXPECT_THAT(result.output,
              HasSubstr("[scheduler restart 1] scheduler args: --port=0 "
                        "--num_servers=1 --num_workers=1 "
                        "--advertise_host=127.0.0.1 --port=12345 --recover\n"));
  EXPECT_THAT(result.output, HasSubstr("[scheduler restart 1] scheduler done"));
  ExpectWholeLines(result.output);
}

TEST_F(LauncherTest, AKilledSchedulerStopsTheJobWhenNotRestarted) {
  std::ofstream(dir_ + "/kill_scheduler") << "1\n";
  Launcher::Options options;
  options.num_servers = 1;
  options.num_workers = 1;
  options.bin_dir = dir_;
  options.command = {"petrel-fake-worker", "ok"};
  options.grace_period = absl::Seconds(5);
  auto [code, status] = RunCollectingStatus(options);
  EXPECT_EQ(code, 1);
  EXPECT_THAT(status, ::testing::Contains(
                          "petrel-launch: scheduler exited with code 137 "
                          "(killed by signal 9); stopping the job"));
  options.restart_killed_scheduler = true;
  options.max_scheduler_restarts = 0;
  auto [capped, lines] = RunCollectingStatus(options);
  EXPECT_EQ(capped, 1);
  EXPECT_THAT(lines, ::testing::Contains(
                         "petrel-launch: the scheduler was killed by signal 9 "
                         "and is not restarted: 0 restarts already (most 0)"));
  options.max_scheduler_restarts = -1;
  EXPECT_EQ(RunCollectingStatus(options).first, 2);
}

void ExpectSignalStopsJob(std::unique_ptr<Subprocess> launch, int sig,
                          int expected_exit_code) {
  ASSERT_NE(launch, nullptr);
  ASSERT_TRUE(launch->WaitForLine("[worker 0] ready", kDeadline).ok())
      << launch->Output();
  launch->Signal(sig);
  absl::StatusOr<int> code = launch->Wait(kDeadline);
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, expected_exit_code) << launch->Output();
  EXPECT_THAT(launch->Output(), HasSubstr("; stopping the job"));
  EXPECT_THAT(launch->Output(), Not(HasSubstr("SIGKILL")));
}

TEST_F(LauncherTest, SigtermStopsJob) {
  ExpectSignalStopsJob(
      StartLaunch({"--num_workers=2", "--", "petrel-fake-worker", "hang"}),
      SIGTERM, 143);
}

TEST_F(LauncherTest, SigintStopsJob) {
  ExpectSignalStopsJob(
      StartLaunch({"--num_workers=1", "--", "petrel-fake-worker", "hang"}),
      SIGINT, 130);
}

// With --config the first signal goes to the scheduler alone (which stops
// the job); the fake scheduler dies of it but the other children keep
// running, so the launcher kills them after --stop_timeout_s.
TEST_F(LauncherTest, GracefulStopKillsTheJobAfterTheStopTimeout) {
  std::ofstream(Path("job.textproto")) << "num_servers: 1 num_workers: 1\n";
  std::unique_ptr<Subprocess> launch =
      StartLaunch({"--config=" + Path("job.textproto"), "--stop_timeout_s=1",
                   "--", "petrel-fake-worker", "hang"});
  ASSERT_NE(launch, nullptr);
  ASSERT_TRUE(launch->WaitForLine("[worker 0] ready", kDeadline).ok())
      << launch->Output();
  launch->Signal(SIGTERM);
  absl::StatusOr<int> code = launch->Wait(kDeadline);
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 143) << launch->Output();
  EXPECT_THAT(launch->Output(),
              HasSubstr("asking the scheduler to stop the job"));
  EXPECT_THAT(launch->Output(),
              HasSubstr("the job did not stop within 1s; killing it"));
}

TEST_F(LauncherTest, SecondSignalKillsTheJobAtOnce) {
  std::ofstream(Path("job.textproto")) << "num_servers: 1 num_workers: 1\n";
  std::unique_ptr<Subprocess> launch =
      StartLaunch({"--config=" + Path("job.textproto"), "--stop_timeout_s=60",
                   "--", "petrel-fake-worker", "hang"});
  ASSERT_NE(launch, nullptr);
  ASSERT_TRUE(launch->WaitForLine("[worker 0] ready", kDeadline).ok())
      << launch->Output();
  launch->Signal(SIGINT);
  ASSERT_TRUE(
      launch->WaitForLine("asking the scheduler to stop", kDeadline).ok());
  launch->Signal(SIGINT);
  absl::StatusOr<int> code = launch->Wait(kDeadline);
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 130) << launch->Output();
  EXPECT_THAT(launch->Output(), HasSubstr("second signal; killing the job"));
}

TEST_F(LauncherTest, TimeoutStopsJob) {
  Result result =
      RunLaunch({"--timeout_s=1", "--", "petrel-fake-worker", "hang"});
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_THAT(result.output, HasSubstr("petrel-launch: job still running "
                                       "after the 1s timeout; stopping it"));
}

TEST_F(LauncherTest, StopsSchedulerThatOutlivesWorkers) {
  std::ofstream(Path("scheduler_ignores_workers")) << "1";
  Result result =
      RunLaunch({"--drain_timeout_s=1", "--", "petrel-fake-worker", "ok"});
  // The fake scheduler dies of the SIGTERM, so the job fails.
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_THAT(result.output,
              HasSubstr("petrel-launch: scheduler or servers still running 1s "
                        "after all workers finished; stopping them"));
}

TEST_F(LauncherTest, MissingSchedulerBinaryFails) {
  unlink(Path("petrel-scheduler").c_str());
  Result result = RunLaunch({"--", "petrel-fake-worker", "ok"});
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_THAT(result.output, HasSubstr("petrel-launch: starting scheduler: "));
  EXPECT_THAT(result.output, HasSubstr("petrel-scheduler"));
}

TEST_F(LauncherTest, RejectsBadFlagsWithExitCode2) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--num_servers=0", "--", "petrel-fake-worker"},
       "num_servers must be at least 1, got 0"},
      {{"--num_workers=-1", "--", "petrel-fake-worker"},
       "num_workers must be at least 1, got -1"},
      {{"--num_workers=1"}, "no worker command given"},
      {{"--", "petrel-no-such-command"}, "petrel-no-such-command"},
      {{"--hosts=/nonexistent/hosts", "--", "true"},
       "cannot read hosts file /nonexistent/hosts"},
      {{"--hosts=/dev/null", "--", "true"}, "/dev/null: no host"},
      {{"--hosts=/dev/null", "--host=10.0.0.1", "--", "true"},
       "--host and --hosts exclude each other"}};
  for (const auto& [args, message] : cases) {
    Result result = RunLaunch(args);
    EXPECT_EQ(result.exit_code, 2) << result.output;
    EXPECT_THAT(result.output, HasSubstr(message));
    std::vector<std::string> lines =
        absl::StrSplit(result.output, '\n', absl::SkipEmpty());
    EXPECT_EQ(lines.size(), 1u) << result.output;
  }
}

// In an srun step petrel-launch --slurm becomes the task's process: here
// task 2 of 3 with one server, so worker 0, whose exit code is the
// launcher's.
TEST_F(LauncherTest, SlurmTaskBecomesItsProcess) {
  const std::vector<std::pair<std::string, std::string>> env = {
      {"SLURM_JOB_ID", "77"},
      {"SLURM_NTASKS", "3"},
      {"SLURM_STEP_ID", "0"},
      {"SLURM_PROCID", "2"},
      {"SLURM_STEP_NODELIST", "n[1-2]"}};
  Result result = RunLaunch(
      {"--slurm", "--", "/bin/sh", "-c",
       "echo $DMLC_ROLE rank=$PETREL_RANK at=$PETREL_SCHEDULER; exit 2"},
      env);
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_THAT(result.output,
              HasSubstr("petrel-launch: Slurm task 2 of 3 runs the worker 0\n"
                        "worker rank=0 at=n1:20077\n"));
  // Task 1 is the (fake) server, told where the scheduler is; it waits to
  // be stopped, and the Subprocess's destructor kills it.
  std::vector<std::pair<std::string, std::string>> server_env = env;
  server_env[3].second = "1";
  std::unique_ptr<Subprocess> server = StartLaunch(
      {"--slurm", "--scheduler_port=5000", "--", "true"}, server_env);
  ASSERT_NE(server, nullptr);
  absl::StatusOr<std::string> line =
      server->WaitForLine("server args:", kDeadline);
  ASSERT_TRUE(line.ok()) << line.status();
  EXPECT_EQ(*line,
            "server args: --scheduler=n1:5000 --port=0 --rank=0 "
            "--num_servers=1 --num_workers=1");
  // More servers than the tasks allow: exit 2 before anything runs.
  result = RunLaunch({"--slurm", "--num_servers=2", "--", "true"}, env);
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_THAT(result.output, HasSubstr("the step has 3 tasks"));
}

TEST_F(LauncherTest, HelpDescribesFlagsAndDefaults) {
  Result result = RunLaunch({"--help"});
  EXPECT_EQ(result.exit_code, 0);
  for (const char* flag : {"-num_servers", "-num_workers", "-bin_dir", "-host",
                           "-timeout_s", "--host=\"127.0.0.1\""}) {
    EXPECT_THAT(result.output, HasSubstr(flag));
  }
}

TEST_F(LauncherTest, LauncherClassRunsJobInProcess) {
  absl::Mutex mu;
  std::vector<std::string> output, status;
  Launcher::Options options;
  options.num_servers = 1;
  options.num_workers = 1;
  options.bin_dir = dir_;
  options.command = {"petrel-fake-worker", "ok"};
  options.print_output = [&](std::string_view line) {
    absl::MutexLock lock(&mu);
    output.emplace_back(line);
  };
  options.print_status = [&](std::string_view line) {
    absl::MutexLock lock(&mu);
    status.emplace_back(line);
  };
  Launcher launcher(std::move(options));
  EXPECT_EQ(launcher.Run(), 0);
  absl::MutexLock lock(&mu);
  EXPECT_THAT(output, ::testing::Contains("[worker 0] env role=worker "
                                          "uri=127.0.0.1 port=12345 servers=1 "
                                          "workers=1 host=127.0.0.1 rank=0 "
                                          "scheduler=127.0.0.1:12345"));
  EXPECT_TRUE(status.empty());
}

TEST_F(LauncherTest, ResolvesCommandFromPathThenBinDir) {
  EXPECT_EQ(*ResolveCommand("sh", "/nonexistent:/bin", dir_), "/bin/sh");
  EXPECT_EQ(*ResolveCommand("petrel-fake-worker", "/bin", dir_),
            Path("petrel-fake-worker"));
  EXPECT_EQ(*ResolveCommand("./relative/x", "/bin", dir_), "./relative/x");
  // Not executable, so not a match.
  EXPECT_EQ(ResolveCommand("workers_done", "", dir_).status().code(),
            absl::StatusCode::kNotFound);
}

TEST(LauncherValidateTest, RejectsBadOptions) {
  Launcher::Options options;
  options.bin_dir = "/bin";
  options.command = {"true"};
  EXPECT_TRUE(Launcher::Validate(options).ok());
  Launcher::Options bad = options;
  bad.num_servers = 0;
  EXPECT_EQ(Launcher::Validate(bad).code(), absl::StatusCode::kInvalidArgument);
  bad = options;
  bad.num_workers = 0;
  EXPECT_EQ(Launcher::Validate(bad).code(), absl::StatusCode::kInvalidArgument);
  bad = options;
  bad.command.clear();
  EXPECT_EQ(Launcher::Validate(bad).code(), absl::StatusCode::kInvalidArgument);
  bad = options;
  bad.job_timeout = absl::Seconds(-1);
  EXPECT_EQ(Launcher::Validate(bad).code(), absl::StatusCode::kInvalidArgument);
  bad = options;
  bad.hosts = *ParseHostsFile("h roles=server,worker\n", "hosts");
  EXPECT_EQ(Launcher::Validate(bad).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace petrel

namespace petrel {
namespace {

TEST(MetricsUrlTest, ReadsTheAnnouncedMetricsAddress) {
  EXPECT_EQ(MetricsUrl("PETREL_READY role=server id=8 rank=0 host=10.0.0.2 "
                       "port=4000 metrics_port=9100 metrics_host=10.0.0.2"),
            "http://10.0.0.2:9100/metrics");
  EXPECT_EQ(MetricsUrl("PETREL_LISTEN role=scheduler host=h port=1 "
                       "metrics_port=7 metrics_host=127.0.0.1"),
            "http://127.0.0.1:7/metrics");
  // Metrics off, or not an announce line.
  EXPECT_EQ(MetricsUrl("PETREL_READY role=worker port=1 metrics_port=-1 "
                       "metrics_host="),
            std::nullopt);
  EXPECT_EQ(MetricsUrl("progress metrics_port=7 metrics_host=x"), std::nullopt);
  EXPECT_TRUE(IsPetrelWorker("/opt/petrel/bin/petrel-worker"));
  EXPECT_FALSE(IsPetrelWorker("python3"));
}

}  // namespace
}  // namespace petrel
