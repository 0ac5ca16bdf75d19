// petrel-export: writes a checkpoint's tables in a documented layout that
// other tools can read (tools/export/table_export.h, docs/export-format.md).
//
//   petrel-export --model=/ckpt/job1 --output=model.txt --format=text
//   petrel-export --model=/ckpt/job1/latest --output=model.bin
//       --format=binary --tables=1,2 --with_state
//
// --model is a checkpoint directory, a checkpoint root (its newest complete
// checkpoint) or ROOT/latest. The output is written to FILE.tmp and renamed
// when complete (a device such as /dev/null is written in place). One
// summary line on stdout:
//   petrel-export: checkpoint=/ckpt/job1/ckpt-00000003 tables=2
//       rows=1000000 bytes=12000048 format=binary seconds=0.40
// Exit codes: 0 done, 1 runtime failure (missing or damaged checkpoint,
// unwritable output), 2 bad flags.
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gflags/gflags.h"
#include "glog/logging.h"

#include "base/cli.h"
#include "base/flag_check.h"
#include "base/status_macros.h"
#include "tools/export/table_export.h"
#include "tools/predict/model_dir.h"

DEFINE_string(model, "",
              "Checkpoint directory, checkpoint root (its newest complete "
              "checkpoint) or ROOT/latest. Required.");
DEFINE_string(output, "", "File to write. Required.");
DEFINE_string(format, "text",
              "text (\"TABLE_ID KEY W0 W1 ...\" per row) or binary "
              "(docs/export-format.md). Default text.");
DEFINE_string(tables, "",
              "Comma-separated table ids to export. Default: every table.");
DEFINE_bool(with_state, false,
            "Also write each row's optimizer state after its weights.");

namespace petrel {
namespace {

constexpr int kExitRuntime = 1;
constexpr int kExitUsage = 2;

int Fail(int code, const absl::Status& status) {
  std::fprintf(stderr, "petrel-export: %s%s\n",
               std::string(status.message()).c_str(),
               code == kExitUsage ? " (see --help)" : "");
  return code;
}

int Run() {
  if (FLAGS_model.empty()) {
    return Fail(kExitUsage, absl::InvalidArgumentError(
                                "--model is required (a checkpoint directory "
                                "or root)"));
  }
  if (FLAGS_output.empty()) {
    return Fail(kExitUsage, absl::InvalidArgumentError("--output is required"));
  }
  ExportOptions options;
  absl::StatusOr<ExportFormat> format = ParseExportFormat(FLAGS_format);
  if (!format.ok())
    return Fail(kExitUsage, Annotate(format.status(), "--format"));
  options.format = *format;
  absl::StatusOr<std::vector<int>> tables = ParseTableIds(FLAGS_tables);
  if (!tables.ok())
    return Fail(kExitUsage, Annotate(tables.status(), "--tables"));
  options.tables = *tables;
  options.with_state = FLAGS_with_state;

  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<ModelDir> model = OpenModelDir(FLAGS_model);
  if (!model.ok()) return Fail(kExitRuntime, model.status());
  absl::StatusOr<ExportStats> stats =
      ExportCheckpoint(model->dir, model->manifest, options, FLAGS_output);
  if (!stats.ok()) return Fail(kExitRuntime, stats.status());
  const std::chrono::duration<double> seconds =
      std::chrono::steady_clock::now() - start;
  std::printf(
      "petrel-export: checkpoint=%s tables=%d rows=%llu bytes=%llu "
      "format=%s seconds=%.2f\n",
      model->dir.c_str(), stats->tables,
      static_cast<unsigned long long>(stats->rows),
      static_cast<unsigned long long>(stats->bytes), FLAGS_format.c_str(),
      seconds.count());
  return 0;
}

}  // namespace
}  // namespace petrel

int main(int argc, char** argv) {
  petrel::CliOptions cli;
  cli.name = "petrel-export";
  cli.usage =
      "writes a checkpoint's tables as text or the binary layout of "
      "docs/export-format.md.\n"
      "  petrel-export --model=CHECKPOINT --output=FILE "
      "[--format=text|binary] [--tables=ID,...] [--with_state]\n"
      "Exit status: 0 done, 1 runtime failure, 2 bad flags.";
  if (int code = petrel::ParseCommandLine(cli, &argc, &argv); code >= 0) {
    return code;
  }
  return petrel::Run();
}
