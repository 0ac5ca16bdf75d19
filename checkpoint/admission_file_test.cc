#include "checkpoint/admission_file.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace petrel {
namespace {

class AdmissionFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "admission_file_test.XXXXXX";
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(AdmissionFileTest, RoundTripsAndNamesItsFile) {
  EXPECT_EQ(AdmissionFileName(3, 1), "admission-3-server-1.bin");
  const std::string path = dir_ + "/" + AdmissionFileName(3, 1);
  const std::vector<uint16_t> counters = {0, 1, 2, 65535, 300, 7};
  ASSERT_TRUE(WriteAdmissionFile(path, 3, counters).ok());
  absl::StatusOr<std::vector<uint16_t>> back = ReadAdmissionFile(path, 3);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, counters);
  EXPECT_EQ(std::filesystem::file_size(path), 24 + 2 * counters.size() + 8);
}

TEST_F(AdmissionFileTest, MissingIsNotFoundAndDamageIsDataLoss) {
  const std::string path = dir_ + "/a.bin";
  EXPECT_EQ(ReadAdmissionFile(path, 0).status().code(),
            absl::StatusCode::kNotFound);
  ASSERT_TRUE(WriteAdmissionFile(path, 0, std::vector<uint16_t>(100, 9)).ok());
  EXPECT_EQ(ReadAdmissionFile(path, 1).status().code(),
            absl::StatusCode::kDataLoss);  // another table's
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(50);
    f.put('\x7f');
  }
  absl::StatusOr<std::vector<uint16_t>> flipped = ReadAdmissionFile(path, 0);
  EXPECT_EQ(flipped.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(flipped.status().message().find("checksum"), std::string::npos);
  std::filesystem::resize_file(path, 100);
  EXPECT_EQ(ReadAdmissionFile(path, 0).status().code(),
            absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace petrel
