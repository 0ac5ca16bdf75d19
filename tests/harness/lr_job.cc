#include "tests/harness/lr_job.h"

#include <filesystem>
#include <memory>
#include <system_error>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

#include "tests/harness/daemon_cluster.h"

namespace petrel {

absl::Status GenerateLrData(const std::string& bin_dir, const std::string& dir,
                            int train_examples, absl::Duration timeout) {
  absl::StatusOr<std::unique_ptr<Subprocess>> gen = StartProgram(
      {bin_dir + "/petrel-datagen", "--train_out=" + dir + "/train.svm",
       absl::StrCat("--train_examples=", train_examples),
       "--test_out=" + dir + "/test.svm", "--test_examples=10000", "--seed=7",
       "--index_bits=16"});
  if (!gen.ok()) return gen.status();
  absl::StatusOr<int> code = (*gen)->Wait(timeout);
  if (!code.ok()) return code.status();
  if (*code != 0) {
    return absl::InternalError(
        absl::StrCat("petrel-datagen exited ", *code, ": ", (*gen)->Output()));
  }
  return absl::OkStatus();
}

absl::Status FreshLrData(const std::string& bin_dir, const std::string& dir,
                         int train_examples, absl::Duration timeout) {
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  if (!ec) std::filesystem::create_directories(dir, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("cannot make ", dir, " afresh: ", ec.message()));
  }
  return GenerateLrData(bin_dir, dir, train_examples, timeout);
}

std::string LrJobText(const std::string& dir, int num_workers, int max_delay) {
  return LrJobTextWithServers(dir, 2, num_workers, max_delay);
}

std::string LrJobTextWithServers(const std::string& dir, int num_servers,
                                 int num_workers, int max_delay) {
  return absl::StrCat(
      "num_servers: ", num_servers, " num_workers: ", num_workers,
      "\n"
      "model { kind: KIND_LR }\n"
      "tables { id: 0 dim: 1 optimizer { kind: KIND_FTRL ftrl_alpha: 0.1 "
      "ftrl_beta: 0.001 ftrl_l2: 0.002 ftrl_weight_decay: 5e-5 } }\n"
      "consistency { max_delay: ",
      max_delay,
      " }\n"
      "data { format: FORMAT_LIBSVM train: \"",
      dir, "/train.svm\" test: \"", dir, "/test.svm\" }\n");
}

}  // namespace petrel
