#include "base/config_file.h"

#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "proto/job.pb.h"

namespace petrel {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

std::string WriteFile(const std::string& name, const std::string& text) {
  std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(ConfigFileTest, ParsesAValidFile) {
  std::string path = WriteFile("ok.textproto", R"(
    # a comment
    num_servers: 2
    tables { id: 3 dim: 8 optimizer { kind: KIND_ADAGRAD learning_rate: 0.1 } }
    model { kind: KIND_FM fm_dim: 8 }
    data { train: "a.txt" train: "b.txt" }
  )");
  pb::JobConfig job;
  job.set_num_workers(7);  // cleared by the parse
  ASSERT_TRUE(ParseTextProtoFile(path, &job).ok());
  EXPECT_EQ(job.num_servers(), 2);
  EXPECT_EQ(job.num_workers(), 0);
  ASSERT_EQ(job.tables_size(), 1);
  EXPECT_EQ(job.tables(0).id(), 3);
  EXPECT_EQ(job.tables(0).optimizer().kind(), pb::OptimizerProto::KIND_ADAGRAD);
  EXPECT_FLOAT_EQ(job.tables(0).optimizer().learning_rate(), 0.1f);
  EXPECT_EQ(job.model().kind(), pb::ModelConfig::KIND_FM);
  EXPECT_EQ(job.data().train_size(), 2);
}

TEST(ConfigFileTest, UnknownFieldNamesFileLineAndField) {
  std::string path = WriteFile("unknown.textproto",
                               "num_servers: 2\n"
                               "train {\n"
                               "  batch_sise: 10\n"
                               "}\n");
  pb::JobConfig job;
  absl::Status s = ParseTextProtoFile(path, &job);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()),
              AllOf(HasSubstr(path + ":3:"), HasSubstr("no field named"),
                    HasSubstr("batch_sise")));
}

TEST(ConfigFileTest, BadValuesNameTheLine) {
  struct Case {
    std::string text;
    std::string line_col;
    std::string what;
  };
  for (const Case& c : {
           Case{"num_servers: \"two\"\n", ":1:14:", "Expected integer"},
           Case{"\n\nnum_workers: 99999999999\n", ":3:14:", "out of range"},
           Case{"model {\n kind: KIND_SVM }\n", ":2:", "KIND_SVM"},
           Case{"tables { dim: 2.5 }\n", ":1:15:", "Expected integer"},
           Case{"tables { id: 1\n", ":2:1:", "end of file"},
       }) {
    std::string path = WriteFile("bad.textproto", c.text);
    pb::JobConfig job;
    absl::Status s = ParseTextProtoFile(path, &job);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.text;
    EXPECT_THAT(std::string(s.message()),
                AllOf(HasSubstr(path + c.line_col), HasSubstr(c.what)))
        << c.text;
  }
}

TEST(ConfigFileTest, MissingFileIsNotFound) {
  pb::JobConfig job;
  absl::Status s =
      ParseTextProtoFile(::testing::TempDir() + "/no/such.textproto", &job);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(s.message()), HasSubstr("no/such.textproto"));
}

TEST(ConfigFileTest, DirectoryIsInvalidArgument) {
  pb::JobConfig job;
  EXPECT_EQ(ParseTextProtoFile(::testing::TempDir(), &job).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ConfigFileTest, ParsesTextWithAName) {
  pb::JobConfig job;
  EXPECT_TRUE(ParseTextProto("num_workers: 3", "flags", &job).ok());
  EXPECT_EQ(job.num_workers(), 3);
  absl::Status s = ParseTextProto("num_workers: x", "flags", &job);
  EXPECT_THAT(std::string(s.message()), HasSubstr("flags:1:14:"));
}

}  // namespace
}  // namespace petrel
