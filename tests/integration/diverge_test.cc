// Runs that cannot succeed end quickly, non-zero and with a message that
// says why, with the real daemons under petrel-launch: a feature value of
// 1e20 (rejected by the reader naming FILE:LINE, or, when the config lets
// it through, a diverged run stopped naming table, optimizer and step), an
// empty training file, and configs refused before anything starts.
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

#include "tests/harness/daemon_cluster.h"

namespace petrel {
namespace {

// Each run must end well within this (the default timeouts are minutes).
constexpr absl::Duration kDeadline = absl::Seconds(60);

std::string Bin(const std::string& name) {
  return std::string(PETREL_BIN_DIR) + "/" + name;
}

std::string ShippedLr() {
  return std::string(PETREL_SOURCE_DIR) + "/deploy/examples/lr.textproto";
}

class DivergeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(
        ::testing::TempDir(), "petrel_diverge_test_",
        ::testing::UnitTest::GetInstance()->current_test_info()->name(), "_",
        getpid());
    std::system(("mkdir -p " + dir_).c_str());
  }
  void TearDown() override { std::system(("rm -rf " + dir_).c_str()); }

  // Writes `text` to DIR/NAME and returns the path.
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }

  // 300 ordinary libsvm lines, line 150 with a value of `huge` instead.
  std::string DataWithHugeValue(const std::string& huge) {
    std::string text;
    for (int i = 1; i <= 300; ++i) {
      absl::StrAppend(&text, i % 3 ? "1" : "0", " ", i % 7, ":1 ", 100 + i, ":",
                      i == 150 ? huge : "0.5", "\n");
    }
    return Write("train.svm", text);
  }

  // Runs petrel-launch on one server and one worker; expects it to end
  // within kDeadline and returns its output and exit code.
  std::string Launch(const std::string& config, const std::string& train,
                     int* code) {
    const absl::Time start = absl::Now();
    absl::StatusOr<std::unique_ptr<Subprocess>> launch = StartProgram(
        {Bin("petrel-launch"), "--config=" + config, "--num_servers=1",
         "--num_workers=1", "--train=" + train, "--test=" + train,
         "--timeout_s=90", "--grace_period_s=2"});
    EXPECT_TRUE(launch.ok()) << launch.status();
    if (!launch.ok()) return "";
    absl::StatusOr<int> c = (*launch)->Wait(kDeadline + absl::Seconds(30));
    *code = c.ok() ? *c : -1;
    const std::string out = (*launch)->Output();
    EXPECT_LT(absl::Now() - start, kDeadline) << out;
    return out;
  }

  std::string dir_;
};

TEST_F(DivergeTest, HugeValueUnderTheShippedConfigNamesFileAndLine) {
  const std::string train = DataWithHugeValue("1e20");
  int code = 0;
  const std::string out = Launch(ShippedLr(), train, &code);
  EXPECT_NE(code, 0) << out;
  EXPECT_TRUE(absl::StrContains(
      out, absl::StrCat(train,
                        ":150: value 1e+20 of index 250 is above "
                        "data.max_abs_value 1e+09")))
      << out;
}

TEST_F(DivergeTest, DivergedRunStopsNamingTableOptimizerAndStep) {
  // The same shipped LR, with the reader's bound lifted: the gradient of
  // the 1e30 line would overflow FTRL's squared-gradient state.
  std::ifstream shipped(ShippedLr());
  std::string config((std::istreambuf_iterator<char>(shipped)),
                     std::istreambuf_iterator<char>());
  const std::string data = "data { format: FORMAT_LIBSVM";
  const size_t at = config.find(data);
  ASSERT_NE(at, std::string::npos) << config;
  config.insert(at + data.size(), " max_abs_value: 1e38");
  const std::string train = DataWithHugeValue("1e30");
  int code = 0;
  const std::string out = Launch(Write("lr.textproto", config), train, &code);
  EXPECT_NE(code, 0) << out;
  EXPECT_TRUE(absl::StrContains(out, "training diverged at step 0 (epoch 1)"))
      << out;
  EXPECT_TRUE(absl::StrContains(out, "table 0 (optimizer FTRL)")) << out;
}

TEST_F(DivergeTest, EmptyTrainingFileIsAnErrorNamingIt) {
  const std::string train = Write("empty.svm", "");
  int code = 0;
  const std::string out = Launch(ShippedLr(), train, &code);
  EXPECT_NE(code, 0) << out;
  EXPECT_TRUE(absl::StrContains(out, "data.train: " + train + " is empty"))
      << out;
  // Blank lines only: no example either.
  const std::string blank = Write("blank.svm", "\n\n# nothing\n");
  const std::string out2 = Launch(ShippedLr(), blank, &code);
  EXPECT_NE(code, 0) << out2;
  EXPECT_TRUE(
      absl::StrContains(out2, "data.train: no training examples in " + blank))
      << out2;
}

TEST_F(DivergeTest, ConfigsThatCannotRunAreRefusedBeforeAnythingStarts) {
  const std::string train = DataWithHugeValue("1");
  int code = 0;
  std::string out = Launch(
      Write("negative.textproto", "num_servers: -1\nmodel { kind: KIND_LR }\n"),
      train, &code);
  EXPECT_NE(code, 0) << out;
  EXPECT_TRUE(absl::StrContains(out, "num_servers: -1 is negative")) << out;
  EXPECT_FALSE(absl::StrContains(out, "[scheduler]")) << out;
  out = Launch(Write("huge.textproto",
                     "memory_limit_mib: 4096\n"
                     "model { kind: KIND_MLP hidden: [30000, 30000] }\n"),
               train, &code);
  EXPECT_NE(code, 0) << out;
  EXPECT_TRUE(absl::StrContains(out, "model.hidden: the dense tables need"))
      << out;
  EXPECT_TRUE(absl::StrContains(out, "memory_limit_mib of 4.0 GiB")) << out;
  EXPECT_FALSE(absl::StrContains(out, "[scheduler]")) << out;
}

}  // namespace
}  // namespace petrel
