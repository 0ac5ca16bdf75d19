// DedupSorted: the device-neutral dedup. Sizes are checked here, so the
// CUDA entry point (kernels/internal/cuda_ops.h) can assume them. The CPU
// path deduplicates with the hash table of Dedup (O(keys)) and then sorts
// only the unique keys, which is cheaper than sorting every position when
// keys repeat (a Criteo batch has about half as many unique keys as keys).
#include "kernels/dedup.h"

#include <algorithm>
#include <limits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

#include "base/status_macros.h"
#include "kernels/internal/cuda_ops.h"
#include "kernels/internal/dedup_impl.h"
#include "kernels/sparse_batch.h"

namespace petrel {
namespace {

void DedupSortedCpu(absl::Span<const uint64_t> keys,
                    absl::Span<uint64_t> unique, absl::Span<uint32_t> inverse,
                    size_t* num_unique) {
  // Reused across calls, like Dedup's table.
  thread_local std::vector<uint64_t> first_seen;
  thread_local std::vector<uint32_t> first_inverse;
  thread_local std::vector<std::pair<uint64_t, uint32_t>> order;
  thread_local std::vector<uint32_t> rank;
  internal::DedupOpenAddressing(keys, &first_seen, &first_inverse);
  const size_t u = first_seen.size();
  order.resize(u);
  for (size_t i = 0; i < u; ++i) {
    order[i] = {first_seen[i], static_cast<uint32_t>(i)};
  }
  std::sort(order.begin(), order.end());
  rank.resize(u);
  for (size_t r = 0; r < u; ++r) {
    unique[r] = order[r].first;
    rank[order[r].second] = static_cast<uint32_t>(r);
  }
  for (size_t j = 0; j < keys.size(); ++j) inverse[j] = rank[first_inverse[j]];
  *num_unique = u;
}

}  // namespace

absl::Status DedupSorted(const Device& device, absl::Span<const uint64_t> keys,
                         absl::Span<uint64_t> unique,
                         absl::Span<uint32_t> inverse, size_t* num_unique) {
  CHECK(num_unique != nullptr);
  PETREL_RETURN_IF_ERROR(CheckSize("unique", unique.size(), keys.size()));
  PETREL_RETURN_IF_ERROR(CheckSize("inverse", inverse.size(), keys.size()));
  constexpr size_t kMaxKeys = std::numeric_limits<uint32_t>::max();
  if (keys.size() > kMaxKeys) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch has ", keys.size(), " keys, at most ", kMaxKeys,
                     " fit a uint32 inverse index"));
  }
  if (device.is_cuda()) {
#ifdef PETREL_HAVE_CUDA
    return internal::DedupSortedCuda(device, keys, unique, inverse, num_unique);
#else
    return absl::FailedPreconditionError("no CUDA in this build");
#endif
  }
  DedupSortedCpu(keys, unique, inverse, num_unique);
  return absl::OkStatus();
}

}  // namespace petrel
