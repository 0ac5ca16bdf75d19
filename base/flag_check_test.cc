#include "base/flag_check.h"

#include <vector>

#include "gflags/gflags.h"
#include "gtest/gtest.h"

DEFINE_int32(fc_count, 1, "test flag");
DEFINE_bool(fc_verbose, false, "test flag");
DEFINE_string(fc_name, "x", "test flag");

namespace petrel {
namespace {

absl::Status Check(std::vector<const char*> args) {
  args.insert(args.begin(), "prog");
  return CheckCommandLineFlags(static_cast<int>(args.size()), args.data());
}

TEST(FlagCheckTest, AcceptsWellFormedFlags) {
  EXPECT_TRUE(Check({"--fc_count=7", "--fc_verbose", "-fc_name", "y"}).ok());
  EXPECT_EQ(FLAGS_fc_count, 7);
  EXPECT_EQ(FLAGS_fc_name, "y");
  EXPECT_TRUE(Check({"--nofc_verbose", "--fc_verbose=false"}).ok());
  EXPECT_TRUE(Check({"positional", "--", "--not_a_flag"}).ok());
}

TEST(FlagCheckTest, RejectsUnknownFlag) {
  absl::Status s = Check({"--fc_count=2", "--no_such_flag=1"});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("no_such_flag"), std::string::npos);
  EXPECT_FALSE(Check({"--nofc_count"}).ok());  // "no" only for bools.
}

TEST(FlagCheckTest, RejectsUnparsableValue) {
  absl::Status s = Check({"--fc_count=abc"});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("--fc_count=abc"), std::string::npos);
  EXPECT_FALSE(Check({"--fc_verbose=maybe"}).ok());
  EXPECT_FALSE(Check({"--fc_count=99999999999"}).ok());
}

TEST(FlagCheckTest, RejectsMissingValue) {
  EXPECT_EQ(Check({"--fc_name"}).code(), absl::StatusCode::kInvalidArgument);
}

TEST(FlagCheckTest, RangeNamesTheFlagTheValueAndTheRange) {
  EXPECT_TRUE(CheckFlagRange("rank", -1, -1, 16383).ok());
  EXPECT_TRUE(CheckFlagRange("rank", 16383, -1, 16383).ok());
  absl::Status s = CheckFlagRange("rank", -5, -1, 16383);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "--rank: -5 is not in -1..16383");
  EXPECT_FALSE(CheckFlagRange("port", 70000, 0, 65535).ok());
}

}  // namespace
}  // namespace petrel
