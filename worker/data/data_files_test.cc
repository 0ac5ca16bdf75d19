#include "worker/data/data_files.h"

#include <cstdlib>
#include <fstream>
#include <map>
#include <string>

#include <unistd.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace petrel {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class DataFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string dir = ::testing::TempDir() + "petrel_data_files_XXXXXX";
    ASSERT_NE(mkdtemp(dir.data()), nullptr);
    dir_ = dir;
    for (const char* name :
         {"part-2.svm", "part-1.svm", "part-10.svm", "test.svm"}) {
      std::ofstream(dir_ + "/" + name) << "1 1:1\n";
    }
    env_ = {{"DATA", dir_}, {"EMPTY", ""}};
  }
  void TearDown() override {
    for (const char* name :
         {"part-2.svm", "part-1.svm", "part-10.svm", "test.svm"}) {
      unlink((dir_ + "/" + name).c_str());
    }
    rmdir(dir_.c_str());
  }

  absl::Status Expand(pb::DataConfig* data) {
    return ExpandDataFiles(
        [this](const char* name) -> const char* {
          auto it = env_.find(name);
          return it == env_.end() ? nullptr : it->second.c_str();
        },
        data);
  }

  std::string dir_;
  std::map<std::string, std::string> env_;
};

TEST_F(DataFilesTest, GlobsExpandSortedAndPlainNamesStay) {
  pb::DataConfig data;
  data.add_train(dir_ + "/part-*.svm");
  data.add_train("/not/checked/here.svm");
  data.add_test(dir_ + "/tes?.svm");
  ASSERT_TRUE(Expand(&data).ok());
  EXPECT_THAT(data.train(),
              ElementsAre(dir_ + "/part-1.svm", dir_ + "/part-10.svm",
                          dir_ + "/part-2.svm", "/not/checked/here.svm"));
  EXPECT_THAT(data.test(), ElementsAre(dir_ + "/test.svm"));
}

TEST_F(DataFilesTest, VariablesNameTheHostsPath) {
  pb::DataConfig data;
  data.add_train("${DATA}/part-[12].svm");
  data.add_train("$DATA/test.svm");
  data.add_test("${EMPTY}relative.svm");
  ASSERT_TRUE(Expand(&data).ok());
  EXPECT_THAT(data.train(),
              ElementsAre(dir_ + "/part-1.svm", dir_ + "/part-2.svm",
                          dir_ + "/test.svm"));
  EXPECT_THAT(data.test(), ElementsAre("relative.svm"));
}

TEST_F(DataFilesTest, ErrorsNameTheFieldAndEntry) {
  struct Case {
    bool train;
    std::string entry;
    std::string message;
  };
  for (const Case& c : {
           Case{true, "$UNSET/a.svm",
                "data.train: '$UNSET/a.svm': $UNSET is "
                "not set on this host"},
           Case{false, "${DATA/a.svm",
                "data.test: '${DATA/a.svm': '${' "
                "without '}'"},
           Case{true, "a$", "'$' is not followed by a variable name"},
           Case{true, "${A-B}", "'$' is not followed by a variable name"},
           Case{true, "$DATA/none-*.svm", "matches no file ("},
       }) {
    pb::DataConfig data;
    (c.train ? data.add_train() : data.add_test())->assign(c.entry);
    absl::Status s = Expand(&data);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.entry;
    EXPECT_THAT(s.message(), HasSubstr(c.message)) << c.entry;
  }
}

}  // namespace
}  // namespace petrel
