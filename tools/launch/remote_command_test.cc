#include "tools/launch/remote_command.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "tools/launch/subprocess.h"

namespace petrel {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr absl::Duration kDeadline = absl::Seconds(20);

TEST(RemoteCommandTest, ShellQuoteSurvivesQuotesAndSpaces) {
  EXPECT_EQ(ShellQuote("plain"), "'plain'");
  EXPECT_EQ(ShellQuote("it's a b"), "'it'\\''s a b'");
}

TEST(RemoteCommandTest, SshInBatchModeWithPortAndOptions) {
  SshOptions options;
  options.port = 2222;
  options.extra_args = {"-i", "key"};
  std::vector<std::string> argv =
      SshArgv(options, "bob@node1", {"/bin/petrel-server"}, {});
  ASSERT_EQ(argv.size(), 11u);
  EXPECT_THAT(std::vector<std::string>(argv.begin(), argv.begin() + 10),
              ElementsAre("ssh", "-T", "-o", "BatchMode=yes", "-p", "2222",
                          "-i", "key", "--", "bob@node1"));
  EXPECT_THAT(argv[10], HasSubstr("exec /bin/sh -c "));
}

// Runs the remote part of SshArgv here, with a pipe as stdin as ssh gives
// it, and without ssh.
std::unique_ptr<Subprocess> RunRemotePart(
    const std::vector<std::string>& argv,
    const std::vector<std::pair<std::string, std::string>>& env,
    const std::string& dir = "") {
  SshOptions options;
  options.working_dir = dir;
  options.grace_period = absl::Seconds(1);
  Subprocess::Options sub;
  sub.argv = {"/bin/sh", "-c", SshArgv(options, "host", argv, env).back()};
  sub.pipe_stdin = true;
  absl::StatusOr<std::unique_ptr<Subprocess>> proc =
      Subprocess::Start(std::move(sub));
  EXPECT_TRUE(proc.ok()) << proc.status();
  return proc.ok() ? *std::move(proc) : nullptr;
}

TEST(RemoteCommandTest, PassesEnvironmentDirectoryAndExitCode) {
  auto proc = RunRemotePart({"/bin/sh", "-c", "echo \"$A|$(pwd)\"; exit 2"},
                            {{"A", "it's x"}}, "/tmp");
  ASSERT_NE(proc, nullptr);
  absl::StatusOr<int> code = proc->Wait(kDeadline);
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 2);
  EXPECT_EQ(proc->Output(), "it's x|/tmp\n");
}

TEST(RemoteCommandTest, MissingDirectoryIsReportedNotFatal) {
  auto proc = RunRemotePart({"/bin/echo", "ran"}, {}, "/nonexistent/dir");
  ASSERT_NE(proc, nullptr);
  ASSERT_TRUE(proc->Wait(kDeadline).ok());
  EXPECT_THAT(proc->Output(), HasSubstr("no directory /nonexistent/dir here"));
  EXPECT_THAT(proc->Output(), HasSubstr("ran"));
}

TEST(RemoteCommandTest, ClosingStdinTerminatesTheProcess) {
  auto proc = RunRemotePart({"/bin/sh", "-c",
                             "trap 'echo got TERM; exit 3' TERM; echo up; "
                             "while :; do sleep 0.1; done"},
                            {});
  ASSERT_NE(proc, nullptr);
  ASSERT_TRUE(proc->WaitForLine("up", kDeadline).ok());
  proc->CloseStdin();
  absl::StatusOr<int> code = proc->Wait(kDeadline);
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 3);
  EXPECT_THAT(proc->Output(), HasSubstr("got TERM"));
}

TEST(RemoteCommandTest, ProcessIgnoringTermIsKilledAfterTheGracePeriod) {
  auto proc = RunRemotePart(
      {"/bin/sh", "-c", "trap '' TERM; echo up; while :; do sleep 0.1; done"},
      {});
  ASSERT_NE(proc, nullptr);
  ASSERT_TRUE(proc->WaitForLine("up", kDeadline).ok());
  proc->CloseStdin();
  absl::StatusOr<int> code = proc->Wait(kDeadline);
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 128 + 9);
}

}  // namespace
}  // namespace petrel
