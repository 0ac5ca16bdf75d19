#include "base/build_info.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "base/build_info_values.h"

namespace petrel {
namespace {

using ::testing::MatchesRegex;

TEST(BuildInfoTest, VersionIsTheProjectVersion) {
  const BuildInfo info = GetBuildInfo();
  EXPECT_THAT(std::string(info.version),
              MatchesRegex("[0-9]+\\.[0-9]+\\.[0-9]+"));
  EXPECT_EQ(info.version, PETREL_VERSION_STRING);
}

TEST(BuildInfoTest, CommitIsAHashOrUnknown) {
  const std::string commit(GetBuildInfo().git_commit);
  EXPECT_THAT(commit, MatchesRegex("unknown|[0-9a-f]{7,40}")) << commit;
}

TEST(BuildInfoTest, BuildTypeIsNeverEmpty) {
  EXPECT_FALSE(GetBuildInfo().build_type.empty());
}

TEST(BuildInfoTest, CudaMatchesTheBuild) {
#ifdef PETREL_HAVE_CUDA
  EXPECT_TRUE(GetBuildInfo().cuda);
#else
  EXPECT_FALSE(GetBuildInfo().cuda);
#endif
}

TEST(BuildInfoTest, VersionLineNamesEveryField) {
  const BuildInfo info = GetBuildInfo();
  const std::string expected = "petrel-server " + std::string(info.version) +
                               " (commit " + std::string(info.git_commit) +
                               ", " + std::string(info.build_type) + ", CUDA " +
                               (info.cuda ? "on" : "off") + ")";
  EXPECT_EQ(VersionLine("petrel-server"), expected);
}

TEST(BuildInfoTest, VersionLineIsOneLine) {
  EXPECT_EQ(VersionLine("petrel-launch").find('\n'), std::string::npos);
}

}  // namespace
}  // namespace petrel
