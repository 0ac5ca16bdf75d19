#include "worker/testing/temp_file.h"

#include <algorithm>
#include <fstream>

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace petrel {

std::string WriteTempFile(absl::string_view name, absl::string_view content) {
  const ::testing::TestInfo* test =
      ::testing::UnitTest::GetInstance()->current_test_info();
  std::string path = absl::StrCat(::testing::TempDir(), test->test_suite_name(),
                                  ".", test->name(), ".", getpid(), ".", name);
  // Parameterized tests' names hold '/'.
  std::replace(path.begin() + ::testing::TempDir().size(), path.end(), '/',
               '_');
  std::ofstream(path, std::ios::binary) << content;
  return path;
}

}  // namespace petrel
