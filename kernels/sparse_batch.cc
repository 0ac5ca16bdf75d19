#include "kernels/sparse_batch.h"

#include "absl/strings/str_cat.h"

#include "base/status_macros.h"

namespace petrel {

absl::Status CheckSize(const char* what, size_t span_size, size_t expected) {
  if (span_size == expected) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(what, " has ", span_size, " entries, expected ", expected));
}

absl::Status ValidateSparseBatch(const SparseBatchView& batch,
                                 size_t num_unique) {
  if (batch.offsets.empty()) {
    return absl::InvalidArgumentError(
        "offsets is empty, expected examples + 1 entries");
  }
  PETREL_RETURN_IF_ERROR(
      CheckSize("values", batch.values.size(), batch.inverse.size()));
  if (batch.offsets.front() != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("offsets[0] is ", batch.offsets.front(), ", not 0"));
  }
  for (size_t i = 1; i < batch.offsets.size(); ++i) {
    if (batch.offsets[i] < batch.offsets[i - 1]) {
      return absl::InvalidArgumentError(absl::StrCat(
          "offsets[", i, "] = ", batch.offsets[i], " is below offsets[", i - 1,
          "] = ", batch.offsets[i - 1]));
    }
  }
  if (batch.offsets.back() != batch.nnz()) {
    return absl::InvalidArgumentError(
        absl::StrCat("offsets ends at ", batch.offsets.back(),
                     " but there are ", batch.nnz(), " features"));
  }
  // One branch-free pass for the maximum keeps the common (valid) case fast;
  // the slow search for the position runs only on failure.
  uint32_t max_index = 0;
  for (uint32_t u : batch.inverse) max_index = u > max_index ? u : max_index;
  if (batch.nnz() > 0 && max_index >= num_unique) {
    for (size_t j = 0; j < batch.nnz(); ++j) {
      if (batch.inverse[j] >= num_unique) {
        return absl::InvalidArgumentError(
            absl::StrCat("inverse[", j, "] = ", batch.inverse[j],
                         " is out of range for ", num_unique, " unique rows"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace petrel
