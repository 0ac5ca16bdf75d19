// petrel-datagen: writes Criteo-like synthetic training and test data with a
// known ground-truth logistic model (tools/datagen/generator.h) and prints
// the Bayes-optimal log loss of what it wrote.
//
//   petrel-datagen --train_out=train.txt --train_examples=1000000
//       --test_out=test.txt --test_examples=200000 --format=libsvm --seed=1
//
// Output, one line per split and then the test split's Bayes log loss (the
// train split's when no test split is written):
//   split=train file=train.txt examples=1000000 positive_rate=0.25012
//       bayes_logloss=0.45123 constant_logloss=0.56234 seconds=2.1
//   bayes_logloss=0.45100
// Exit codes: 0 done, 1 write failure, 2 bad flags.
#include <chrono>
#include <cstdio>
#include <string>

#include "absl/strings/str_format.h"
#include "gflags/gflags.h"
#include "glog/logging.h"

#include "base/cli.h"
#include "tools/datagen/generator.h"

DEFINE_string(train_out, "", "Training file to write (required).");
DEFINE_int64(train_examples, 1000000, "Training examples; >= 0.");
DEFINE_string(test_out, "", "Test file to write; default none.");
DEFINE_int64(test_examples, 200000, "Test examples when --test_out is set.");
DEFINE_uint64(seed, 1, "Seed: the same seed and flags give the same bytes.");
DEFINE_string(format, "libsvm", "Output format: libsvm or criteo.");
DEFINE_int32(index_bits, 24,
             "libsvm indices are (hashed key mod 2^bits) + 1; the ground "
             "truth is defined over these indices in both formats. 8..62.");
DEFINE_double(weight_stddev, 0.3, "Stddev of the ground-truth weights.");
DEFINE_double(positive_rate, 0.25, "Expected fraction of positive labels.");
DEFINE_double(zipf_exponent, 1.1, "Zipf exponent of categorical values.");
DEFINE_bool(interactions, false,
            "Add pairwise field-interaction weights to the ground truth.");
DEFINE_double(interaction_scale, 1.0,
              "With --interactions: multiplies the interaction weights "
              "(stddev weight_stddev * scale). (0, 100).");
DEFINE_int32(max_fields, 39,
             "At most this many of the 39 fields per example: a random subset "
             "of the present ones is kept, in the text and the ground truth "
             "alike (15 gives libsvm rows of about 15 nonzeros). 1..39; "
             "default 39 (all).");
DEFINE_int32(interaction_rank, 0,
             "With --interactions: 0 draws an independent weight per value "
             "pair; k in 1..64 makes the weights rank-k latent-factor dot "
             "products (learnable from each value's examples).");

namespace petrel {
namespace datagen {
namespace {

absl::StatusOr<DatagenOptions> OptionsFromFlags() {
  DatagenOptions options;
  if (FLAGS_format == "libsvm") {
    options.format = DataFormat::kLibsvm;
  } else if (FLAGS_format == "criteo") {
    options.format = DataFormat::kCriteo;
  } else {
    return absl::InvalidArgumentError(
        absl::StrFormat("--format=%s is not libsvm or criteo", FLAGS_format));
  }
  if (FLAGS_train_out.empty()) {
    return absl::InvalidArgumentError("--train_out is required");
  }
  if (FLAGS_train_examples < 0 || FLAGS_test_examples < 0) {
    return absl::InvalidArgumentError("example counts must be >= 0");
  }
  options.seed = FLAGS_seed;
  options.index_bits = FLAGS_index_bits;
  options.weight_stddev = FLAGS_weight_stddev;
  options.positive_rate = FLAGS_positive_rate;
  options.zipf_exponent = FLAGS_zipf_exponent;
  options.interactions = FLAGS_interactions;
  options.interaction_scale = FLAGS_interaction_scale;
  options.interaction_rank = FLAGS_interaction_rank;
  options.max_fields = FLAGS_max_fields;
  return options;
}

// Writes one split and prints its line; returns its stats.
absl::StatusOr<SplitStats> WriteSplit(const Generator& generator,
                                      const char* name, const std::string& path,
                                      uint64_t stream, int64_t count) {
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<SplitStats> stats = generator.WriteFile(path, stream, count);
  if (!stats.ok()) return stats;
  const std::chrono::duration<double> seconds =
      std::chrono::steady_clock::now() - start;
  std::printf(
      "split=%s file=%s examples=%lld positive_rate=%.5f bayes_logloss=%.5f "
      "constant_logloss=%.5f seconds=%.2f\n",
      name, path.c_str(), static_cast<long long>(stats->examples),
      stats->positive_rate(), stats->bayes_logloss(), stats->constant_logloss(),
      seconds.count());
  std::fflush(stdout);
  return stats;
}

int Run() {
  absl::StatusOr<DatagenOptions> options = OptionsFromFlags();
  absl::StatusOr<Generator> generator =
      options.ok() ? Generator::Create(*options) : options.status();
  if (!generator.ok()) {
    std::fprintf(stderr, "petrel-datagen: %s\n",
                 std::string(generator.status().message()).c_str());
    return 2;
  }
  absl::StatusOr<SplitStats> last =
      WriteSplit(*generator, "train", FLAGS_train_out, 0, FLAGS_train_examples);
  if (last.ok() && !FLAGS_test_out.empty()) {
    last =
        WriteSplit(*generator, "test", FLAGS_test_out, 1, FLAGS_test_examples);
  }
  if (!last.ok()) {
    std::fprintf(stderr, "petrel-datagen: %s\n",
                 std::string(last.status().message()).c_str());
    return 1;
  }
  std::printf("bayes_logloss=%.5f\n", last->bayes_logloss());
  return 0;
}

}  // namespace
}  // namespace datagen
}  // namespace petrel

int main(int argc, char** argv) {
  petrel::CliOptions cli;
  cli.name = "petrel-datagen";
  cli.usage =
      "writes synthetic training and test data with a known model.\n"
      "  petrel-datagen --train_out=FILE [--test_out=FILE] [--format=libsvm]";
  if (int code = petrel::ParseCommandLine(cli, &argc, &argv); code >= 0) {
    return code;
  }
  return petrel::datagen::Run();
}
