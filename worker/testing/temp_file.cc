#include "worker/testing/temp_file.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>

#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace petrel {
namespace {

// Removes, when the test program exits, the files WriteTempFile wrote and
// what the readers put beside them (parsed-example caches: PATH.*).
class WrittenFiles {
 public:
  ~WrittenFiles() {
    std::error_code ec;
    for (const std::string& path : paths_) {
      const std::filesystem::path p(path);
      const std::string prefix = p.filename().string() + ".";
      for (const auto& entry :
           std::filesystem::directory_iterator(p.parent_path(), ec)) {
        if (absl::StartsWith(entry.path().filename().string(), prefix)) {
          std::filesystem::remove(entry.path(), ec);
        }
      }
      std::filesystem::remove(p, ec);
    }
  }
  void Add(const std::string& path) { paths_.push_back(path); }

 private:
  std::vector<std::string> paths_;
};

WrittenFiles& Written() {
  static WrittenFiles files;  // test-only: its destructor is the point
  return files;
}

}  // namespace

std::string WriteTempFile(absl::string_view name, absl::string_view content) {
  const ::testing::TestInfo* test =
      ::testing::UnitTest::GetInstance()->current_test_info();
  std::string path = absl::StrCat(::testing::TempDir(), test->test_suite_name(),
                                  ".", test->name(), ".", getpid(), ".", name);
  // Parameterized tests' names hold '/'.
  std::replace(path.begin() + ::testing::TempDir().size(), path.end(), '/',
               '_');
  std::ofstream(path, std::ios::binary) << content;
  Written().Add(path);
  return path;
}

}  // namespace petrel
