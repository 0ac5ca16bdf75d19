#include "base/cli.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/synchronization/mutex.h"
#include "gflags/gflags.h"
#include "gtest/gtest.h"

DEFINE_int32(cli_count, 3, "How many things. Default 3.");
DEFINE_string(cli_name, "x", "A name. Default x.");

namespace petrel {
namespace {

CliOptions Options() {
  CliOptions o;
  o.name = "cli-test";
  o.usage = "tests the command line.";
  return o;
}

// Runs ParseCommandLine on "cli-test ARGS...".
int Parse(std::vector<std::string> args, const CliOptions& options) {
  args.insert(args.begin(), "cli-test");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int argc = static_cast<int>(args.size());
  char** p = argv.data();
  return ParseCommandLine(options, &argc, &p);
}

TEST(CliTest, GroupsFlagsByTheFileThatDefinesThem) {
  EXPECT_EQ(FlagGroup("../node/node_flags.cc", "port"), "Cluster (every node)");
  EXPECT_EQ(FlagGroup("/home/me/petrel/worker/train/worker_flags.cc", "job"),
            "Worker jobs");
  EXPECT_EQ(FlagGroup("my_program.cc", "my_flag"), "Program");
  EXPECT_EQ(FlagGroup("./src/logging.cc", "log_dir"), "Logging");
  EXPECT_EQ(FlagGroup("./src/logging.cc", "logtostderr"), "");
  EXPECT_EQ(FlagGroup("/build/gflags-x/gflags-2.2.2/src/gflags.cc", "flagfile"),
            "");
}

TEST(CliTest, HelpShowsOwnFlagsWithoutLibraryInternalsOrPaths) {
  const std::string help = HelpText(Options());
  EXPECT_TRUE(absl::StartsWith(help, "cli-test: tests the command line.\n"));
  EXPECT_TRUE(absl::StrContains(help, "\nProgram:\n")) << help;
  EXPECT_TRUE(absl::StrContains(help, "--cli_count=3  (int32)")) << help;
  EXPECT_TRUE(absl::StrContains(help, "How many things. Default 3.")) << help;
  EXPECT_TRUE(absl::StrContains(help, "--cli_name=\"x\"")) << help;
  EXPECT_TRUE(absl::StrContains(help, "\nLogging:\n  --log_dir=")) << help;
  for (const char* internal :
       {"logtostderr", "flagfile", "helpxml", "stderrthreshold", "Flags from",
        "_test.cc", "/build/"}) {
    EXPECT_FALSE(absl::StrContains(help, internal)) << internal << "\n" << help;
  }
}

TEST(CliTest, HelpAndVersionExitZero) {
  EXPECT_EQ(Parse({"--help"}, Options()), 0);
  EXPECT_EQ(Parse({"--version"}, Options()), 0);
  gflags::SetCommandLineOption("help", "false");
  gflags::SetCommandLineOption("version", "false");
}

TEST(CliTest, BadCommandLinesExitTwo) {
  EXPECT_EQ(Parse({"--no_such_flag=1"}, Options()), 2);
  EXPECT_EQ(Parse({"--cli_count=abc"}, Options()), 2);
  EXPECT_EQ(Parse({"stray"}, Options()), 2);
  EXPECT_EQ(Parse({"--log_dir=/nonexistent/petrel-logs"}, Options()), 2);
  gflags::SetCommandLineOption("log_dir", "");
}

TEST(CliTest, PositionalArgumentsStayForTheProgram) {
  CliOptions o = Options();
  o.positional_arguments = true;
  std::vector<std::string> args = {"cli-test", "--cli_count=5", "command"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int argc = 3;
  char** p = argv.data();
  EXPECT_EQ(ParseCommandLine(o, &argc, &p), -1);
  EXPECT_EQ(FLAGS_cli_count, 5);
  ASSERT_EQ(argc, 2);
  EXPECT_STREQ(p[1], "command");
}

TEST(CliTest, ReleaseBuildsTurnOffMutexDeadlockDetection) {
#ifndef NDEBUG
  GTEST_SKIP() << "debug builds keep absl's deadlock detection";
#else
  EXPECT_EQ(Parse({}, Options()), -1);
  // Two mutexes taken in both orders: with the detection on, absl reports a
  // potential deadlock and aborts the process.
  absl::Mutex a;
  absl::Mutex b;
  {
    absl::MutexLock first(&a);
    absl::MutexLock second(&b);
  }
  {
    absl::MutexLock first(&b);
    absl::MutexLock second(&a);
  }
#endif
}

}  // namespace
}  // namespace petrel
