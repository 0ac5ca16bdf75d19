#include "worker/train/divergence_check.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"

#include "job/job_check.h"

namespace petrel {
namespace {

constexpr char kAdvice[] =
    "; the job stops (lower the learning rate, or bound the data with "
    "data.max_abs_value)";

std::string Where(int64_t step, int epoch) {
  return absl::StrCat("training diverged at step ", step, " (epoch ", epoch + 1,
                      "): ");
}

}  // namespace

absl::Status CheckDivergence(const pb::JobConfig& job,
                             const std::vector<ModelTable>& tables, double loss,
                             const std::vector<std::vector<float>>& grads,
                             int64_t step, int epoch) {
  for (size_t t = 0; t < tables.size() && t < grads.size(); ++t) {
    const int64_t bad =
        FindUnsafeValue(absl::MakeConstSpan(grads[t]), kMaxGradientMagnitude);
    if (bad < 0) continue;
    return absl::FailedPreconditionError(
        absl::StrCat(Where(step, epoch), "a gradient of ",
                     DescribeTable(job, tables[t].id), " is ", grads[t][bad],
                     " (NaN, infinite or beyond +-", kMaxGradientMagnitude,
                     ", where its square overflows the optimizer's "
                     "float state)",
                     kAdvice));
  }
  if (!std::isfinite(loss)) {
    std::string names;
    for (const ModelTable& t : tables) {
      absl::StrAppend(&names, names.empty() ? "" : ", ",
                      DescribeTable(job, t.id));
    }
    return absl::FailedPreconditionError(absl::StrCat(
        Where(step, epoch), "the loss is ", loss, " (", names, ")", kAdvice));
  }
  return absl::OkStatus();
}

}  // namespace petrel
