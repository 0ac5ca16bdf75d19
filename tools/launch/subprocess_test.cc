#include "tools/launch/subprocess.h"

#include <cerrno>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <signal.h>
#include <unistd.h>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace petrel {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Generous bound for things that should take milliseconds.
constexpr absl::Duration kDeadline = absl::Seconds(20);

std::unique_ptr<Subprocess> StartShell(const std::string& script,
                                       Subprocess::Options options = {}) {
  options.argv = {"/bin/sh", "-c", script};
  absl::StatusOr<std::unique_ptr<Subprocess>> proc =
      Subprocess::Start(std::move(options));
  EXPECT_TRUE(proc.ok()) << proc.status();
  return proc.ok() ? *std::move(proc) : nullptr;
}

TEST(SubprocessTest, CapturesStdoutAndStderrLines) {
  auto proc = StartShell("echo one; echo two >&2; printf three");
  ASSERT_NE(proc, nullptr);
  absl::StatusOr<int> code = proc->Wait(kDeadline);
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 0);
  EXPECT_EQ(proc->Output(), "one\ntwo\nthree\n");
  EXPECT_FALSE(proc->Running());
}

TEST(SubprocessTest, PipeStdinReachesEndOfFileOnCloseStdin) {
  Subprocess::Options options;
  options.pipe_stdin = true;
  auto proc = StartShell("echo ready; cat > /dev/null; echo eof", options);
  ASSERT_NE(proc, nullptr);
  ASSERT_TRUE(proc->WaitForLine("ready", kDeadline).ok());
  EXPECT_TRUE(proc->Running());
  proc->CloseStdin();
  proc->CloseStdin();  // A second close does nothing.
  absl::StatusOr<int> code = proc->Wait(kDeadline);
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 0);
  EXPECT_EQ(proc->Output(), "ready\neof\n");
}

TEST(SubprocessTest, CallsOnLineForEveryLineThenOnExit) {
  absl::Mutex mu;
  std::vector<std::string> lines;
  int exit_code = -1;
  Subprocess::Options options;
  options.on_line = [&](const std::string& line) {
    absl::MutexLock lock(&mu);
    lines.push_back(line);
  };
  options.on_exit = [&](int code) {
    absl::MutexLock lock(&mu);
    exit_code = code;
  };
  auto proc = StartShell("echo a; echo; echo c; exit 4", std::move(options));
  ASSERT_NE(proc, nullptr);
  absl::MutexLock lock(&mu);
  ASSERT_TRUE(mu.AwaitWithTimeout(
      absl::Condition(
          +[](int* code) { return *code != -1; }, &exit_code),
      kDeadline));
  EXPECT_EQ(exit_code, 4);
  EXPECT_THAT(lines, ElementsAre("a", "", "c"));
}

TEST(SubprocessTest, WaitForLineFindsEarlierAndFutureLines) {
  // The trap prints after the test has seen "armed" and sent SIGUSR1, so
  // "got-usr1" is certainly a future line when WaitForLine starts.
  auto proc = StartShell(
      "trap 'echo got-usr1; kill $pid; exit 0' USR1; "
      "sleep 1000 & pid=$!; echo armed pid=$pid; wait $pid");
  ASSERT_NE(proc, nullptr);
  absl::StatusOr<std::string> armed = proc->WaitForLine("armed", kDeadline);
  ASSERT_TRUE(armed.ok()) << armed.status();
  EXPECT_THAT(*armed, HasSubstr("armed pid="));
  // Already-seen lines are found again.
  EXPECT_TRUE(proc->WaitForLine("armed", absl::ZeroDuration()).ok());
  proc->Signal(SIGUSR1);
  absl::StatusOr<std::string> got = proc->WaitForLine("usr1", kDeadline);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, "got-usr1");
  absl::StatusOr<int> code = proc->Wait(kDeadline);
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 0);
}

TEST(SubprocessTest, WaitForLineTimesOutWithLastLines) {
  auto proc = StartShell("echo hello; echo ready; exec sleep 1000");
  ASSERT_NE(proc, nullptr);
  ASSERT_TRUE(proc->WaitForLine("ready", kDeadline).ok());
  const absl::Time start = absl::Now();
  absl::StatusOr<std::string> line =
      proc->WaitForLine("never", absl::Milliseconds(200));
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(200));
  ASSERT_EQ(line.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(line.status().message(), HasSubstr("hello\nready"));
  EXPECT_TRUE(proc->Running());
}

TEST(SubprocessTest, WaitForLineFailsWhenProcessExitsFirst) {
  auto proc = StartShell("echo bye; exit 0");
  ASSERT_NE(proc, nullptr);
  absl::StatusOr<std::string> line = proc->WaitForLine("never", kDeadline);
  EXPECT_EQ(line.status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(SubprocessTest, ReportsExitCode) {
  auto proc = StartShell("exit 7");
  ASSERT_NE(proc, nullptr);
  absl::StatusOr<int> code = proc->Wait(kDeadline);
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 7);
}

TEST(SubprocessTest, ReportsDeathBySignal) {
  auto proc = StartShell("kill -9 $$");
  ASSERT_NE(proc, nullptr);
  absl::StatusOr<int> code = proc->Wait(kDeadline);
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 128 + SIGKILL);
}

TEST(SubprocessTest, SignalTerminatesChild) {
  auto proc = StartShell("exec sleep 1000");
  ASSERT_NE(proc, nullptr);
  proc->Signal(SIGTERM);
  absl::StatusOr<int> code = proc->Wait(kDeadline);
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 128 + SIGTERM);
  proc->Signal(SIGTERM);  // After exit: a no-op.
}

// A child started with die_with_parent goes when what started it goes:
// here the starting thread (as for a launcher killed with kill -9, whose
// one thread dies with it).
TEST(SubprocessTest, DieWithParentKillsTheChildWhenItsStarterDies) {
  std::unique_ptr<Subprocess> proc;
  std::thread starter([&proc] {
    Subprocess::Options options;
    options.die_with_parent = true;
    proc = StartShell("exec sleep 1000", std::move(options));
  });
  starter.join();
  ASSERT_NE(proc, nullptr);
  absl::StatusOr<int> code = proc->Wait(kDeadline);
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 128 + SIGKILL);
}

TEST(SubprocessTest, WaitTimesOutWhileRunning) {
  auto proc = StartShell("exec sleep 1000");
  ASSERT_NE(proc, nullptr);
  absl::StatusOr<int> code = proc->Wait(absl::Milliseconds(100));
  EXPECT_EQ(code.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_TRUE(proc->Running());
}

TEST(SubprocessTest, ExitIsSeenWhileGrandchildHoldsThePipe) {
  auto proc = StartShell("sleep 1000 & echo grandchild=$!; exit 3");
  ASSERT_NE(proc, nullptr);
  absl::StatusOr<int> code = proc->Wait(kDeadline);
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 3);
  absl::StatusOr<std::string> line =
      proc->WaitForLine("grandchild=", absl::ZeroDuration());
  ASSERT_TRUE(line.ok()) << line.status();
  std::map<std::string, std::string> values = ParseKeyValues(*line);
  int grandchild = 0;
  ASSERT_TRUE(absl::SimpleAtoi(values["grandchild"], &grandchild));
  kill(grandchild, SIGKILL);
}

TEST(SubprocessTest, PassesEnvironment) {
  Subprocess::Options options;
  options.env = {{"PETREL_TEST_VAR", "hello world"}, {"HOME", "/override"}};
  auto proc = StartShell("echo \"$PETREL_TEST_VAR|$HOME\"", options);
  ASSERT_NE(proc, nullptr);
  ASSERT_TRUE(proc->Wait(kDeadline).ok());
  EXPECT_EQ(proc->Output(), "hello world|/override\n");
}

TEST(SubprocessTest, ClosesInheritedDescriptors) {
  int fd = dup(STDIN_FILENO);  // dup() does not set close-on-exec.
  ASSERT_GE(fd, 3);
  auto proc =
      StartShell(absl::StrCat("if [ -e /proc/self/fd/", fd,
                              " ]; then echo open; else echo closed; fi"));
  close(fd);
  ASSERT_NE(proc, nullptr);
  ASSERT_TRUE(proc->Wait(kDeadline).ok());
  EXPECT_EQ(proc->Output(), "closed\n");
}

TEST(SubprocessTest, DestructorKillsRunningChildPromptly) {
  auto proc = StartShell("echo up; exec sleep 1000");
  ASSERT_NE(proc, nullptr);
  ASSERT_TRUE(proc->WaitForLine("up", kDeadline).ok());
  const pid_t pid = proc->pid();
  const absl::Time start = absl::Now();
  proc.reset();
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  // Reaped: the pid no longer names our child.
  EXPECT_NE(kill(pid, 0), 0);
}

TEST(SubprocessTest, KeepsOnlyTheLastLinesWhenBounded) {
  Subprocess::Options options;
  options.max_kept_lines = 3;
  auto proc = StartShell("for i in 1 2 3 4 5 6; do echo line$i; done", options);
  ASSERT_NE(proc, nullptr);
  ASSERT_TRUE(proc->Wait(kDeadline).ok());
  EXPECT_EQ(proc->Output(), "line4\nline5\nline6\n");
  EXPECT_TRUE(proc->WaitForLine("line5", absl::ZeroDuration()).ok());
}

TEST(SubprocessTest, CutsVeryLongLines) {
  auto proc =
      StartShell("head -c 70000 /dev/zero | tr '\\0' x; echo; echo end");
  ASSERT_NE(proc, nullptr);
  ASSERT_TRUE(proc->Wait(kDeadline).ok());
  EXPECT_EQ(proc->Output(), std::string(64 * 1024, 'x') + "\n" +
                                std::string(70000 - 64 * 1024, 'x') +
                                "\nend\n");
}

TEST(SubprocessTest, StartNamesProgramThatCannotRun) {
  Subprocess::Options options;
  options.argv = {"/nonexistent/petrel-prog", "--flag"};
  absl::StatusOr<std::unique_ptr<Subprocess>> proc = Subprocess::Start(options);
  ASSERT_FALSE(proc.ok());
  EXPECT_THAT(proc.status().message(), HasSubstr("/nonexistent/petrel-prog"));

  options.argv = {"petrel-no-such-program"};
  proc = Subprocess::Start(options);
  EXPECT_EQ(proc.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(proc.status().message(), HasSubstr("petrel-no-such-program"));

  options.argv = {};
  proc = Subprocess::Start(options);
  EXPECT_EQ(proc.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(SubprocessTest, FindsProgramOnPath) {
  Subprocess::Options options;
  options.argv = {"sh", "-c", "echo via-path"};
  absl::StatusOr<std::unique_ptr<Subprocess>> proc = Subprocess::Start(options);
  ASSERT_TRUE(proc.ok()) << proc.status();
  ASSERT_TRUE((*proc)->Wait(kDeadline).ok());
  EXPECT_EQ((*proc)->Output(), "via-path\n");
}

TEST(ParseKeyValuesTest, ParsesKeyValueTokens) {
  std::map<std::string, std::string> values = ParseKeyValues(
      "PETREL_LISTEN role=scheduler  host=127.0.0.1\tport=12345 x= a=b=c");
  EXPECT_EQ(values.size(), 5u);
  EXPECT_EQ(values["role"], "scheduler");
  EXPECT_EQ(values["host"], "127.0.0.1");
  EXPECT_EQ(values["port"], "12345");
  EXPECT_EQ(values["x"], "");
  EXPECT_EQ(values["a"], "b=c");
  EXPECT_TRUE(ParseKeyValues("").empty());
  EXPECT_TRUE(ParseKeyValues("no pairs here").empty());
}

}  // namespace
}  // namespace petrel
