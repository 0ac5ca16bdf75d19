// Training end to end with the real binaries: petrel-datagen writes a small
// Criteo-like data set with a known ground truth, petrel-launch runs a job
// config on 2 servers and 2 workers, and the final test logloss must land
// in a band above the generator's Bayes-optimal logloss (below it would
// mean a bug or a leak; far above it, a model that did not learn).
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

#include "tests/harness/daemon_cluster.h"

namespace petrel {
namespace {

constexpr absl::Duration kTimeout = absl::Seconds(100);

std::string Bin(const std::string& name) {
  return std::string(PETREL_BIN_DIR) + "/" + name;
}

// The value of `key=` in the first line of `out` that holds `marker`.
double ValueAfter(const std::string& out, const std::string& marker,
                  const std::string& key) {
  size_t line = out.find(marker);
  if (line == std::string::npos) return -1;
  size_t end = out.find('\n', line);
  std::map<std::string, std::string> kv =
      ParseKeyValues(out.substr(line, end - line));
  double v = -1;
  if (!absl::SimpleAtod(kv[key], &v)) return -1;
  return v;
}

std::string RunOrDie(std::vector<std::string> argv, int* code) {
  absl::StatusOr<std::unique_ptr<Subprocess>> p = StartProgram(std::move(argv));
  if (!p.ok()) return std::string(p.status().message());
  absl::StatusOr<int> c = (*p)->Wait(kTimeout);
  *code = c.ok() ? *c : -1;
  return (*p)->Output();
}

class TrainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // One directory per test and process: ctest runs these tests in
    // parallel, and each writes its own data.
    dir_ = absl::StrCat(
        ::testing::TempDir(), "petrel_train_test_",
        ::testing::UnitTest::GetInstance()->current_test_info()->name(), "_",
        getpid());
    std::system(("mkdir -p " + dir_).c_str());
    int code = 0;
    std::string out =
        RunOrDie({Bin("petrel-datagen"), "--train_out=" + dir_ + "/train.svm",
                  "--train_examples=60000", "--test_out=" + dir_ + "/test.svm",
                  "--test_examples=20000", "--seed=5"},
                 &code);
    ASSERT_EQ(code, 0) << out;
    bayes_ = ValueAfter(out, "split=test", "bayes_logloss");
    constant_ = ValueAfter(out, "split=test", "constant_logloss");
    ASSERT_GT(bayes_, 0) << out;
  }

  void TearDown() override { std::system(("rm -rf " + dir_).c_str()); }

  // Runs `config` and returns the final line's test logloss.
  double Train(const std::string& config, std::string* out) {
    int code = 0;
    *out = RunOrDie(
        {Bin("petrel-launch"), "--config=" + config,
         "--train=" + dir_ + "/train.svm", "--test=" + dir_ + "/test.svm",
         "--epochs=2", "--timeout_s=90"},
        &code);
    EXPECT_EQ(code, 0) << *out;
    return ValueAfter(*out, "final test_logloss", "test_logloss");
  }

  std::string dir_;
  double bayes_ = 0;
  double constant_ = 0;
};

TEST_F(TrainTest, LogisticRegressionLearnsCloseToBayes) {
  std::string out;
  double logloss = Train(
      std::string(PETREL_SOURCE_DIR) + "/deploy/examples/lr.textproto", &out);
  ASSERT_GT(logloss, 0) << out;
  // 60k examples of millions of sparse features keep any learner well above
  // Bayes (LR and FM both close about 58% of the gap from the constant
  // predictor, so about 42% remains); a model that learned nothing stays
  // at 100%.
  EXPECT_GT(logloss, bayes_ - 0.01) << out;
  EXPECT_LT(logloss, bayes_ + 0.6 * (constant_ - bayes_)) << out;
  EXPECT_TRUE(absl::StrContains(out, "[worker 1] progress worker=1")) << out;
  EXPECT_TRUE(absl::StrContains(out, "test_auc=")) << out;
}

TEST_F(TrainTest, FactorizationMachineLearnsCloseToBayes) {
  std::string out;
  double logloss = Train(
      std::string(PETREL_SOURCE_DIR) + "/deploy/examples/fm.textproto", &out);
  ASSERT_GT(logloss, 0) << out;
  EXPECT_GT(logloss, bayes_ - 0.01) << out;
  EXPECT_LT(logloss, bayes_ + 0.6 * (constant_ - bayes_)) << out;
}

TEST_F(TrainTest, ServersWriteTheModel) {
  const std::string config = dir_ + "/model.textproto";
  const std::string model = dir_ + "/model.txt";
  std::FILE* f = std::fopen(config.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fprintf(f,
               "num_servers: 2 num_workers: 1\n"
               "model { kind: KIND_LR }\n"
               "train { batch_size: 512 model_output: \"%s\" }\n",
               model.c_str());
  std::fclose(f);
  std::string out;
  ASSERT_GT(Train(config, &out), 0) << out;
  int64_t rows = 0;
  bool bias = false;
  for (int rank = 0; rank < 2; ++rank) {
    std::ifstream in(absl::StrCat(model, ".part-", rank, "-of-2"));
    ASSERT_TRUE(in.good()) << out;
    int table;
    unsigned long long key;
    float weight;
    while (in >> table >> key >> weight) {
      EXPECT_EQ(table, 0);
      bias = bias || key == ~0ULL;
      ++rows;
    }
  }
  // Every key of the training data was touched: far more rows than examples
  // have features, and the bias among them.
  EXPECT_GT(rows, 1000) << out;
  EXPECT_TRUE(bias) << out;
}

}  // namespace
}  // namespace petrel
